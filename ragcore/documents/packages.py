"""The checks every Office package (.docx, .xlsx, .pptx) passes before a library parses it.

An Office file is a ZIP of XML, and a few hundred kilobytes of it can unpack to a tree of
gigabytes. So before python-docx, openpyxl or python-pptx builds anything, the ZIP's directory
is checked against the unpacked-size cap (zipfile never yields more than the directory says) and
every part is streamed through a counting lxml target that builds nothing (`Counter`,
`count_parts`): the file is refused at the first node past the element cap or the nesting-depth
cap, and at a DOCTYPE (no Office program writes one; with entities unresolved, each reference
would be a node no count here sees). A format adds its own counts (Word's paragraphs, Excel's
rows and cells) by giving the counter a `watch` that sees every start tag.

The caps are the DOCX_MAX_* settings for all three formats: they bound what an XML package
costs to parse, whichever program wrote it (README's configuration table says so).
"""

from __future__ import annotations

import io
import zipfile
import zlib
from collections.abc import Callable
from dataclasses import dataclass

from lxml import etree

from ragcore.core import Settings, format_integer, format_megabytes

READ_BYTES = 64 * 1024
ZIP_ERRORS = (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, OSError)
# What reading a damaged, encrypted or oddly compressed member raises.
MEMBER_ERRORS = (zipfile.BadZipFile, zipfile.LargeZipFile, zlib.error, NotImplementedError, RuntimeError, EOFError,
                 OSError)


@dataclass(frozen=True)
class Program:
    """The program a package's messages name: "Bu Excel dosyası …", "Excel'de açıp …"."""

    name: str
    in_name: str  # the locative, with its suffix: "Word'de", "Excel'de", "PowerPoint'te"


WORD = Program("Word", "Word'de")
EXCEL = Program("Excel", "Excel'de")
POWERPOINT = Program("PowerPoint", "PowerPoint'te")


@dataclass(frozen=True)
class PackageLimits:
    """The caps every Office package is parsed under (settings DOCX_MAX_UNPACKED_MB, _ELEMENTS, _DEPTH)."""

    unpacked_mb: int
    elements: int
    depth: int

    @classmethod
    def of(cls, settings: Settings) -> PackageLimits:
        return cls(unpacked_mb=settings.docx_max_unpacked_mb, elements=settings.docx_max_elements,
                   depth=settings.docx_max_depth)

    @property
    def unpacked_bytes(self) -> int:
        return self.unpacked_mb * 1024 * 1024


ErrorFactory = Callable[[str], Exception]


def members(data: bytes, corrupt: ErrorFactory) -> list[zipfile.ZipInfo]:
    """The ZIP's directory; `corrupt(reason)` is raised when it cannot be read."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as package:
            return package.infolist()
    except ZIP_ERRORS as exc:
        raise corrupt(type(exc).__name__) from exc


def check_unpacked(entries: list[zipfile.ZipInfo], limits: PackageLimits, program: Program,
                   too_large: ErrorFactory) -> None:
    """Refuse a package whose parts unpack (by its directory) to more than `limits.unpacked_mb`."""
    unpacked = sum(entry.file_size for entry in entries)
    if unpacked > limits.unpacked_bytes:
        raise too_large(f"Bu {program.name} dosyası açıldığında {format_megabytes(unpacked)} tutuyor; en fazla "
                        f"{limits.unpacked_mb} MB okunabiliyor (DOCX_MAX_UNPACKED_MB). Dosyayı birkaç parçaya "
                        "bölerek ya da içindeki resimleri küçülterek yükleyin.")


class Counter:
    """An lxml parser target: counts what a tree of the parts would hold (elements with their
    attributes, namespace declarations, comments and processing instructions; text nodes lie
    between them) and raises `too_large` at the first one past a cap. It builds nothing, so
    counting a bomb costs no memory, and the parser stops where it raises. `watch(tag)` sees
    every start tag (a format's own counts)."""

    def __init__(self, limits: PackageLimits, program: Program, too_large: ErrorFactory,
                 doctype: Callable[[], Exception], watch: Callable[[str, dict[str, str]], None] | None = None) -> None:
        self.limits = limits
        self.program = program
        self.too_large = too_large
        self.doctype_error = doctype
        self.watch = watch
        self.nodes = self.depth = 0

    def _add(self, nodes: int) -> None:
        self.nodes += nodes
        if self.nodes > self.limits.elements:
            raise self.too_large(f"Bu {self.program.name} dosyası çok büyük: en fazla "
                                 f"{format_integer(self.limits.elements)} XML öğesi okunabiliyor, bu dosyada "
                                 "daha fazlası var (DOCX_MAX_ELEMENTS). Dosyayı birkaç parçaya bölerek yükleyin.")

    def start(self, tag: str, attrib: dict[str, str]) -> None:
        self.depth += 1
        if self.depth > self.limits.depth:
            raise self.too_large(f"Bu {self.program.name} dosyasında iç içe yapılar {self.limits.depth} düzeyden "
                                 f"derin (DOCX_MAX_DEPTH); {self.program.name} böyle dosya yazmaz, dosya bozuk ya da "
                                 f"özel olarak hazırlanmış olabilir. Dosyayı {self.program.in_name} açıp yeniden "
                                 "kaydedin ya da PDF olarak yükleyin.")
        if self.watch is not None:
            self.watch(tag, attrib)
        self._add(1 + len(attrib))

    def end(self, tag: str) -> None:
        self.depth -= 1

    def start_ns(self, prefix: str | None, uri: str) -> None:
        self._add(1)

    def comment(self, text: str) -> None:
        self._add(1)

    def pi(self, target: str, data: str | None = None) -> None:
        self._add(1)

    def doctype(self, name: str | None, public_id: str | None, system_id: str | None) -> None:
        """No Office program writes one; refused before its declarations are read."""
        raise self.doctype_error()

    def close(self) -> None:
        return None


def count_parts(data: bytes, counter: Counter, corrupt: ErrorFactory) -> None:
    """Every part of the package streamed through `counter` before a library parses any, the
    counts summed over all parts, with memory bounded by the read buffer. A part that is no XML
    (an image) stops its parser at once and is skipped; the library keeps such a part's bytes,
    which `check_unpacked`'s cap bounds."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as package:
            for member in package.infolist():
                _count_part(package, member, counter)
    except MEMBER_ERRORS as exc:
        raise corrupt(type(exc).__name__) from exc


def _count_part(package: zipfile.ZipFile, member: zipfile.ZipInfo, counter: Counter) -> None:
    # The same parser settings as python-docx's (docx.oxml.parser), named: huge_tree off keeps
    # libxml2's own limits (256 levels, 10 MB per text node), entities unresolved, no network.
    parser = etree.XMLParser(target=counter, huge_tree=False, resolve_entities=False, no_network=True,
                             load_dtd=False)
    counter.depth = 0
    try:
        with package.open(member) as stream:
            while chunk := stream.read(READ_BYTES):
                parser.feed(chunk)
        parser.close()
    except etree.XMLSyntaxError:  # not XML, or XML that breaks off: the library gets no further in it
        return

# Dayanak image: the app, the REST API and the job worker (compose.yaml). The database and Ollama run
# as their own services.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1
WORKDIR /app

RUN useradd --create-home --uid 10001 dayanak
# Tesseract with its Turkish model: OCR of scanned pages (ragcore/documents/ocr.py). DejaVu Sans: the
# PDF export of conversations writes Turkish letters with it (ragcore/conversations/export.py).
RUN apt-get update && apt-get install -y --no-install-recommends tesseract-ocr tesseract-ocr-tur fonts-dejavu-core \
    && rm -rf /var/lib/apt/lists/*
COPY requirements.txt .
RUN pip install -r requirements.txt

COPY --chown=dayanak:dayanak . .
RUN mkdir -p /data && chown dayanak:dayanak /data
USER dayanak
ENV DATA_DIR=/data
# Streamlit's uvicorn believes X-Forwarded-For from nobody unless told (set it to TRUSTED_PROXIES).
ENV FORWARDED_ALLOW_IPS=""
EXPOSE 8501 8502
# Healthy = the database answers (Streamlit's own /_stcore/health says 200 even when it does not)
# and the app serves. `doctor --quick` never starts the embedded server; the app restarts it.
HEALTHCHECK --interval=30s --timeout=10s --start-period=60s CMD python -m ragcore doctor --quick && \
    python -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8501/_stcore/health', timeout=3)"
CMD ["streamlit", "run", "app.py", "--server.address=0.0.0.0", "--server.port=8501", "--server.headless=true"]

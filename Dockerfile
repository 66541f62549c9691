# Dayanak image: the app, the REST API and the job worker (compose.yaml). The database and Ollama run
# as their own services.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1
WORKDIR /app

RUN useradd --create-home --uid 10001 dayanak
COPY requirements.txt .
RUN pip install -r requirements.txt

COPY --chown=dayanak:dayanak . .
RUN mkdir -p /data && chown dayanak:dayanak /data
USER dayanak
ENV DATA_DIR=/data
EXPOSE 8501 8502
HEALTHCHECK --interval=30s --timeout=5s CMD python -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8501/_stcore/health')"
CMD ["streamlit", "run", "app.py", "--server.address=0.0.0.0", "--server.port=8501", "--server.headless=true"]

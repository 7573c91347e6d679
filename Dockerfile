# idemdash as a container image: the dashboard by default (`idemdash serve`), the jobs with `idemdash scheduler`,
# and any other command (`idemdash migrate`, `idemdash check`) the same way. docs/deploy.md; compose example in
# deploy/compose/compose.yaml. A standard slim Python base, the wheel, a non-root user; nothing else.

# 1. build the wheel from this checkout
FROM python:3.12-slim AS wheel
WORKDIR /src
COPY . .
RUN pip wheel --no-cache-dir --no-deps --wheel-dir /dist .

# 2. install it (and its dependencies from PyPI) into a clean image: no extras, since every command but `demo` runs
#    without them (tests/test_wheel.py runs each one's --help on such an install)
FROM python:3.12-slim
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    IDEMDASH_BIND=0.0.0.0:8000
COPY --from=wheel /dist/ /tmp/dist/
RUN pip install --no-cache-dir /tmp/dist/*.whl \
    && rm -rf /tmp/dist \
    && useradd --system --uid 10001 --user-group --no-create-home --shell /usr/sbin/nologin idemdash
USER 10001:10001
EXPOSE 8000
# liveness: the process answers (readiness, /readyz, is for the orchestrator to ask: it depends on the database)
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s \
    CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/healthz', timeout=4)"]
ENTRYPOINT ["idemdash"]
CMD ["serve"]

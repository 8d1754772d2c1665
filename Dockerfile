# The service image: `docker build -t railyard .` then
# `docker run -p 8080:8080 -p 50051:50051 -e REDIS_URL=redis://redis:6379/0 railyard`.
# Without REDIS_URL it serves from an in-process store (one replica, for trying it out).
FROM python:3.11-slim AS build
# A C compiler for the engine's mypyc build (engine/setup.py); the image itself needs none.
RUN apt-get update && apt-get install -y --no-install-recommends gcc libc6-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY pyproject.toml README.md LICENSE requirements.lock ./
COPY scripts/lock-constraints scripts/
COPY engine engine
COPY api api
COPY service service
# The versions CI tested: requirements.lock's pins as constraints. The three
# wheels of this repository (the engine compiled, the API, the service) and
# what they need; the service's own two dependencies come from the first two.
RUN python scripts/lock-constraints > constraints.txt \
 && PIP_CONSTRAINT=constraints.txt RAILYARD_MYPYC=1 pip wheel --no-cache-dir \
    --constraint constraints.txt --wheel-dir /wheels ./engine ./api/python .

FROM python:3.11-slim
RUN useradd --uid 10001 --no-create-home railyard
COPY --from=build /wheels /wheels
RUN pip install --no-cache-dir /wheels/*.whl && rm -rf /wheels
USER 10001
EXPOSE 8080 50051
ENV RAILYARD_HOST=0.0.0.0 RAILYARD_HTTP_PORT=8080 RAILYARD_GRPC_PORT=50051
HEALTHCHECK --interval=10s --timeout=2s \
  CMD python -c "import urllib.request,sys; sys.exit(urllib.request.urlopen('http://127.0.0.1:8080/healthz').status != 200)"
# SIGTERM stops it gracefully: in-flight calls finish, then it exits.
CMD ["railyard", "serve"]

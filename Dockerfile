# One image for every Strata Python process (planner-api, indexer-api, query-api, proxy, migrate); compose.yaml picks
# the process with `strata serve <name>` / `strata migrate`. Spark runs in the image of spark.Dockerfile.
FROM python:3.11-slim

# Pinned to the workspace's own uv (.tools/bin/uv) so `--frozen` reads uv.lock the same way here as on a laptop.
ARG UV_VERSION=0.13.9
# 185 is the `spark` uid of the apache/spark image: the spark-connect container and the APIs both write the shared
# /data volume (merge outputs, ingested splits, artifacts, janitor deletes), so they must be the same owner.
ARG STRATA_UID=185
ARG STRATA_GID=185

# uv installs into the image's own interpreter rather than downloading one; with no cache to hardlink from, it
# copies, and saying so up front silences its hardlink fallback warning.
ENV PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    UV_PYTHON_DOWNLOADS=never \
    UV_PYTHON=python3.11 \
    UV_COMPILE_BYTECODE=1 \
    UV_LINK_MODE=copy \
    UV_NO_CACHE=1

RUN pip install "uv==${UV_VERSION}"

WORKDIR /app

# Dependencies first, from the manifests alone, so editing source code does not reinstall pyspark and friends.
COPY pyproject.toml uv.lock ./
COPY shared/core/pyproject.toml shared/core/pyproject.toml
COPY shared/metastore/pyproject.toml shared/metastore/pyproject.toml
COPY shared/frame/pyproject.toml shared/frame/pyproject.toml
COPY planner-api/pyproject.toml planner-api/pyproject.toml
COPY indexer-api/pyproject.toml indexer-api/pyproject.toml
COPY query-api/pyproject.toml query-api/pyproject.toml
COPY spark-jobs/pyproject.toml spark-jobs/pyproject.toml
COPY services/pyproject.toml services/pyproject.toml
RUN uv sync --frozen --no-dev --no-install-workspace

COPY shared/ shared/
COPY planner-api/ planner-api/
COPY indexer-api/ indexer-api/
COPY query-api/ query-api/
COPY spark-jobs/ spark-jobs/
COPY services/ services/
RUN uv sync --frozen --no-dev

# /data exists in the image, owned by strata, so Docker seeds an empty named volume mounted there with this owner
# instead of root.
RUN groupadd --system --gid "${STRATA_GID}" strata \
    && useradd --system --uid "${STRATA_UID}" --gid strata --create-home --home-dir /home/strata strata \
    && mkdir -p /data /var/lib/strata \
    && chown strata:strata /data /var/lib/strata

# Settings.home defaults to ./.strata, and /app is not writable by the runtime user.
ENV PATH="/app/.venv/bin:${PATH}" \
    STRATA_HOME=/var/lib/strata

USER strata

# proxy, planner-api, indexer-api, query-api
EXPOSE 8000-8004

CMD ["strata", "--help"]

# The Spark Connect server of compose.yaml, able to run every Strata job.
#
# Strata ships its job code with each Spark Connect session (a zip of strata_jobs/strata_core and an archive of
# the native libraries the jobs import, built for CPython 3.11 on linux-x86_64/aarch64 glibc), so executors need
# no Strata code, only a Python that can load it. The stock apache/spark image has Python 3.10 and no pyarrow,
# which is why that is not enough: this image is the official Spark 4.1.1 distribution and its Java 17 runtime,
# copied from the official image onto the same Python 3.11 base as the Strata image, with the three packages
# PySpark's Arrow features need, pinned to the versions in uv.lock (a test checks they agree).
ARG SPARK_IMAGE=apache/spark:4.1.1-scala2.13-java17-ubuntu
FROM ${SPARK_IMAGE} AS spark

FROM python:3.11-slim

ARG PYARROW_VERSION=26.0.1
ARG NUMPY_VERSION=2.4.6
ARG PANDAS_VERSION=3.1.1
# 185 is the `spark` uid of the official image and the uid of the Strata image: both write the shared /data volume.
ARG SPARK_UID=185

ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    SPARK_HOME=/opt/spark \
    JAVA_HOME=/opt/java/openjdk \
    PYSPARK_PYTHON=/usr/local/bin/python3.11 \
    SPARK_NO_DAEMONIZE=true

COPY --from=spark /opt/java/openjdk /opt/java/openjdk
COPY --from=spark /opt/spark /opt/spark

RUN pip install "pyarrow==${PYARROW_VERSION}" "numpy==${NUMPY_VERSION}" "pandas==${PANDAS_VERSION}" \
    && groupadd --system --gid "${SPARK_UID}" spark \
    && useradd --system --uid "${SPARK_UID}" --gid spark --create-home --home-dir /home/spark spark \
    && mkdir -p /data /opt/spark/work-dir \
    && chown spark:spark /data /opt/spark/work-dir

ENV PATH="/opt/java/openjdk/bin:/opt/spark/bin:/opt/spark/sbin:${PATH}"
WORKDIR /opt/spark/work-dir
USER spark

EXPOSE 15002
CMD ["/opt/spark/sbin/start-connect-server.sh"]

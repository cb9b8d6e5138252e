# The driftless agent image: one static binary, CA certificates for HTTPS Git
# remotes, nothing else. It builds from files staged by scripts/build-image.sh
# (the binary is compiled on the host with CGO_ENABLED=0), so `docker build`
# pulls no base image: it works on machines without a registry, and is the
# same image a user with internet builds.
#
#   scripts/build-image.sh            # builds driftless:dev
#   docker run -d --name driftless --network host \
#     -v /var/run/docker.sock:/var/run/docker.sock \
#     -v /var/lib/driftless:/var/lib/driftless \
#     -v /run/driftless/secrets:/run/driftless/secrets \
#     driftless:dev run --repo https://... --data /var/lib/driftless
#
# Repository files, the apps' state directories (under the data directory)
# and secret files are bind-mounted into containers by the Docker daemon
# from the host, so the data and secrets directories must be the same path
# on the host, and the secrets directory on a tmpfs there (/run is one on
# systemd hosts).
FROM scratch
COPY ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY driftless /driftless
ENV HOME=/data
# A scratch image has no /tmp; extends.file stages the app's compose files
# in a private temporary directory while they load.
ENV TMPDIR=/data
VOLUME ["/data"]
EXPOSE 8080
ENTRYPOINT ["/driftless"]
CMD ["--help"]

# heapscope in a container: the image runs `heapscope watch`.
#
#   docker build -t heapscope .
#   openssl rand -hex 16 > tokens
#   docker run --rm -v "$PWD/heapscope.yaml:/etc/heapscope/heapscope.yaml:ro" \
#     -v "$PWD/tokens:/etc/heapscope/tokens:ro" \
#     -v heapscope-data:/var/lib/heapscope -p 7071:7071 heapscope
#
# watch listens beyond the container's loopback, so it requires a bearer
# token of /etc/heapscope/tokens of every request but a bare /healthz, and
# refuses to start without that file.
#
# The binary is static (no cgo) and runs as an unprivileged user; the store
# lives on the /var/lib/heapscope volume.

FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/heapscope ./cmd/heapscope \
 && mkdir -p /out/data

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/heapscope /usr/local/bin/heapscope
# The store's volume belongs to the user watch runs as.
COPY --from=build --chown=65532:65532 /out/data /var/lib/heapscope
USER nonroot:nonroot
VOLUME /var/lib/heapscope
EXPOSE 7071
ENTRYPOINT ["/usr/local/bin/heapscope"]
CMD ["watch", "--config", "/etc/heapscope/heapscope.yaml", "--data", "/var/lib/heapscope", "--listen", "0.0.0.0:7071", "--auth-tokens", "/etc/heapscope/tokens", "--log-format", "json"]

#!/usr/bin/env bash
# Makes the real tools quotascope drives available and prints their versions:
#   k6 (built with `go install` at a pinned release), prometheus, promtool,
#   alertmanager and redis-server (Debian packages), docker-compose (compose validation),
#   helm (`go install` at a pinned release; renders and lints deploy/helm/quotascope),
#   chromium (Debian's, headless: the report's screenshots and its browser test).
# Does nothing for a tool that is already there. Fails with one line naming the tool and
# the command that installs it when it cannot be had.
#
#   bash scripts/tools.sh          every tool (npm test, npm run tools)
#   bash scripts/tools.sh start    only what `npm start` uses: k6, prometheus and promtool,
#                                  chromium (the report's screenshots); not helm, redis,
#                                  alertmanager or docker-compose (helm alone is about 2 minutes
#                                  of building on a fresh machine)
set -euo pipefail
SET="${1:-all}"
case "$SET" in
  all|start) ;;
  *) echo "tools: unknown set '$SET' (all or start)" >&2; exit 2 ;;
esac
want() { [ "$SET" = all ] || case " k6 prometheus promtool chromium " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }
K6_VERSION="${K6_VERSION:-v2.2.0}"
K6_MODULE="go.k6.io/k6/v2"
HELM_VERSION="${HELM_VERSION:-v3.22.0}"
BIN_DIR="${QUOTASCOPE_BIN:-$HOME/.local/share/quotascope/bin}"
mkdir -p "$BIN_DIR"

fail() { echo "tools: $1 is missing; install it with: $2" >&2; exit 1; }

apt_packages=()
command -v prometheus >/dev/null || apt_packages+=(prometheus)
command -v promtool >/dev/null || apt_packages+=(prometheus)
if want alertmanager; then command -v prometheus-alertmanager >/dev/null || command -v alertmanager >/dev/null || apt_packages+=(prometheus-alertmanager); fi
if want redis-server; then command -v redis-server >/dev/null || apt_packages+=(redis-server); fi
if want docker-compose; then command -v docker-compose >/dev/null || apt_packages+=(docker-compose); fi
command -v chromium >/dev/null || apt_packages+=(chromium)
if [ ${#apt_packages[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "[tools] apt-get install ${apt_packages[*]}…"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >/dev/null
    apt-get install -y -qq --no-install-recommends "${apt_packages[@]}" >/dev/null
    # Debian starts services on install; quotascope starts its own on its own ports.
    for svc in prometheus prometheus-alertmanager prometheus-node-exporter redis-server; do
      (service "$svc" stop >/dev/null 2>&1 || true)
    done
  else
    fail "${apt_packages[*]}" "sudo apt-get update && sudo apt-get install -y ${apt_packages[*]}"
  fi
fi

if [ ! -x "$BIN_DIR/k6" ] || ! "$BIN_DIR/k6" version 2>/dev/null | grep -q "k6 ${K6_VERSION} "; then
  command -v go >/dev/null || fail k6 "go install ${K6_MODULE}@${K6_VERSION} (needs Go >= 1.25)"
  echo "[tools] building k6 ${K6_VERSION} with go install (about 3 minutes the first time)…"
  # `go install module@version` also asks the proxy for the module's version list (to print
  # deprecations), which the proxy may not serve for the /v2 path; installing from a scratch
  # module that requires the pinned version builds exactly the same binary without that call.
  build_dir=$(mktemp -d)
  trap 'rm -rf "$build_dir"' EXIT
  printf 'module quotascope.local/k6build\n\ngo 1.25\n\nrequire %s %s\n' "$K6_MODULE" "$K6_VERSION" >"$build_dir/go.mod"
  (cd "$build_dir" && GOFLAGS=-mod=mod GOBIN="$BIN_DIR" CGO_ENABLED=0 go install -trimpath "$K6_MODULE") \
    || fail k6 "GOBIN=$BIN_DIR go install ${K6_MODULE}@${K6_VERSION}"
fi

if want helm && { [ ! -x "$BIN_DIR/helm" ] || ! "$BIN_DIR/helm" version --short 2>/dev/null | grep -q "^${HELM_VERSION}"; }; then
  command -v go >/dev/null || fail helm "go install helm.sh/helm/v3/cmd/helm@${HELM_VERSION} (needs Go >= 1.25)"
  echo "[tools] building helm ${HELM_VERSION} with go install (about 2 minutes the first time)…"
  # A module-mode build has no release stamp; -X sets the one `helm version` prints.
  GOBIN="$BIN_DIR" CGO_ENABLED=0 go install -trimpath \
    -ldflags "-X helm.sh/helm/v3/internal/version.version=${HELM_VERSION}" "helm.sh/helm/v3/cmd/helm@${HELM_VERSION}" \
    || fail helm "GOBIN=$BIN_DIR go install helm.sh/helm/v3/cmd/helm@${HELM_VERSION}"
fi

echo "k6:           $(K6_NO_USAGE_REPORT=true "$BIN_DIR/k6" version | head -1)"
if want helm; then echo "helm:         $("$BIN_DIR/helm" version --short)"; fi
echo "prometheus:   $(prometheus --version 2>&1 | head -1)"
echo "promtool:     $(promtool --version 2>&1 | head -1)"
if want alertmanager; then
  alertmanager_bin=$(command -v prometheus-alertmanager || command -v alertmanager)
  echo "alertmanager: $("$alertmanager_bin" --version 2>&1 | head -1)"
fi
if want redis-server; then echo "redis-server: $(redis-server --version | head -1)"; fi
echo "chromium:     $(chromium --version 2>/dev/null | head -1)"

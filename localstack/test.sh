#!/usr/bin/env bash
# Deploys tidemark into LocalStack, then runs the integration suite against it.
#   LOCALSTACK_AUTH_TOKEN=... bash localstack/test.sh      (npm run test:localstack)
# KEEP_LOCALSTACK=1 leaves the container running afterwards.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "${HERE}/.." && pwd)"
export TIDEMARK_ENDPOINT="${TIDEMARK_ENDPOINT:-http://127.0.0.1:4566}"

cleanup() {
  if [[ "${KEEP_LOCALSTACK:-0}" != "1" ]]; then
    docker compose -f "${HERE}/docker-compose.yml" down --volumes >/dev/null 2>&1 || true
  fi
}
trap cleanup EXIT

bash "${HERE}/deploy.sh" "$@"

cd "${ROOT}"
TIDEMARK_TARGET=localstack \
AWS_ACCESS_KEY_ID="${AWS_ACCESS_KEY_ID:-test}" \
AWS_SECRET_ACCESS_KEY="${AWS_SECRET_ACCESS_KEY:-test}" \
AWS_REGION="${AWS_REGION:-us-east-1}" \
  node --import tsx --test --test-concurrency=1 "test/integration/**/*.test.ts"

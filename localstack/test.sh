#!/usr/bin/env bash
# npm run test:localstack: deploys the real stack into LocalStack with cdklocal, drives it end to
# end (records on the deployed stream → deployed Lambda → DynamoDB and raw; then the jobs' state
# machines the stack outputs), then destroys the stack and stops LocalStack.
#   LOCALSTACK_AUTH_TOKEN=... bash localstack/test.sh [path/to/tidemark.config.json]
# KEEP_LOCALSTACK=1 leaves the stack and the container running afterwards.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "${HERE}/.." && pwd)"
# shellcheck source=versions.env
source "${HERE}/versions.env"
CONFIG_FILE="$(realpath "${1:-${TIDEMARK_CONFIG_FILE:-${ROOT}/tidemark.config.json}}")"
export TIDEMARK_ENDPOINT="${TIDEMARK_ENDPOINT:-http://127.0.0.1:4566}"
export LOCALSTACK_IMAGE_TAG LOCALSTACK_VOLUME_DIR="${LOCALSTACK_VOLUME_DIR:-${HERE}/.volume}"

cleanup() {
  local status=$?
  if [[ "${KEEP_LOCALSTACK:-0}" != "1" ]]; then
    echo "Tearing down"
    (
      cd "${ROOT}"
      AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test AWS_DEFAULT_REGION="${AWS_DEFAULT_REGION:-us-east-1}" \
      AWS_REGION="${AWS_DEFAULT_REGION:-us-east-1}" AWS_ENDPOINT_URL="${TIDEMARK_ENDPOINT}" \
      AWS_ENDPOINT_URL_S3="http://s3.localhost.localstack.cloud:${TIDEMARK_ENDPOINT##*:}" \
      AWS_ENVAR_ALLOWLIST="AWS_REGION,AWS_DEFAULT_REGION,AWS_ACCESS_KEY_ID,AWS_SECRET_ACCESS_KEY" \
      CDK_DEFAULT_ACCOUNT=000000000000 CDK_DEFAULT_REGION="${AWS_DEFAULT_REGION:-us-east-1}" CDK_DISABLE_CLI_TELEMETRY=true \
        npx --yes --package "aws-cdk-local@${CDKLOCAL_VERSION}" --package "aws-cdk@${AWS_CDK_VERSION}" cdklocal destroy --all --force --no-notices \
        -c "tidemark:configFile=${CONFIG_FILE}" -c "tidemark:removalPolicy=destroy" || echo "destroy failed (the container is removed next anyway)"
    )
    docker compose -f "${HERE}/docker-compose.yml" down --volumes >/dev/null 2>&1 || true
    rm -rf "${LOCALSTACK_VOLUME_DIR}" "${HERE}/.outputs.json" "${HERE}/.cdk.out"
  fi
  exit "${status}"
}
trap cleanup EXIT

bash "${HERE}/deploy.sh" "${CONFIG_FILE}"

cd "${ROOT}"
AWS_DEFAULT_REGION="${AWS_DEFAULT_REGION:-us-east-1}" node --import tsx "${HERE}/e2e.ts" "${CONFIG_FILE}" "${HERE}/.outputs.json" "${HERE}/.cdk.out"

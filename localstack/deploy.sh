#!/usr/bin/env bash
# Starts LocalStack and deploys the tidemark stack into it with cdklocal.
#   LOCALSTACK_AUTH_TOKEN=... bash localstack/deploy.sh [path/to/tidemark.config.json]
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "${HERE}/.." && pwd)"
CONFIG_FILE="${1:-${TIDEMARK_CONFIG_FILE:-${ROOT}/tidemark.config.json}}"
ENDPOINT="${TIDEMARK_ENDPOINT:-http://127.0.0.1:4566}"
CDKLOCAL_VERSION="3.0.4"

die() { echo "deploy.sh: $*" >&2; exit 1; }

command -v docker >/dev/null 2>&1 || die "docker is required (https://docs.docker.com/get-docker/)"
docker compose version >/dev/null 2>&1 || die "the docker compose plugin is required"
[[ -n "${LOCALSTACK_AUTH_TOKEN:-}" ]] || die "LOCALSTACK_AUTH_TOKEN is not set; export it from your LocalStack account"
[[ -f "${CONFIG_FILE}" ]] || die "config file not found: ${CONFIG_FILE}"
command -v curl >/dev/null 2>&1 || die "curl is required"

echo "Starting LocalStack"
docker compose -f "${HERE}/docker-compose.yml" up -d

echo -n "Waiting for ${ENDPOINT} "
for _ in $(seq 1 60); do
  if curl -fsS "${ENDPOINT}/_localstack/health" 2>/dev/null | grep -Eq '"cloudformation": ?"(available|running)"'; then
    echo " ready"
    break
  fi
  echo -n "."
  sleep 2
done
curl -fsS "${ENDPOINT}/_localstack/health" >/dev/null || die "LocalStack did not become healthy; see: docker compose -f ${HERE}/docker-compose.yml logs"

export AWS_ACCESS_KEY_ID="${AWS_ACCESS_KEY_ID:-test}"
export AWS_SECRET_ACCESS_KEY="${AWS_SECRET_ACCESS_KEY:-test}"
export AWS_DEFAULT_REGION="${AWS_DEFAULT_REGION:-us-east-1}"
export AWS_REGION="${AWS_DEFAULT_REGION}"
export AWS_ENDPOINT_URL="${ENDPOINT}"
export CDK_DEFAULT_ACCOUNT="${CDK_DEFAULT_ACCOUNT:-000000000000}"
export CDK_DEFAULT_REGION="${AWS_DEFAULT_REGION}"
export CDK_DISABLE_CLI_TELEMETRY=true

cd "${ROOT}"
if command -v cdklocal >/dev/null 2>&1; then
  CDKLOCAL=(cdklocal)
else
  # aws-cdk-local wraps the project's own aws-cdk CLI (node_modules/aws-cdk).
  CDKLOCAL=(npx --yes --package "aws-cdk-local@${CDKLOCAL_VERSION}" cdklocal)
fi

CONTEXT=(-c "tidemark:configFile=${CONFIG_FILE}" -c "tidemark:removalPolicy=destroy")
"${CDKLOCAL[@]}" bootstrap --no-notices "aws://${CDK_DEFAULT_ACCOUNT}/${AWS_DEFAULT_REGION}"
"${CDKLOCAL[@]}" deploy --all --require-approval never --no-notices "${CONTEXT[@]}" \
  --outputs-file "${HERE}/.outputs.json"
echo "Deployed; stack outputs are in ${HERE}/.outputs.json"

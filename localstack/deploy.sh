#!/usr/bin/env bash
# Starts LocalStack and deploys the real tidemark stack into it with cdklocal.
#   LOCALSTACK_AUTH_TOKEN=... bash localstack/deploy.sh [path/to/tidemark.config.json]
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "${HERE}/.." && pwd)"
# shellcheck source=versions.env
source "${HERE}/versions.env"
CONFIG_FILE="${1:-${TIDEMARK_CONFIG_FILE:-${ROOT}/tidemark.config.json}}"
ENDPOINT="${TIDEMARK_ENDPOINT:-http://127.0.0.1:4566}"
PORT="${ENDPOINT##*:}"

die() { echo "deploy.sh: $*" >&2; exit 1; }

command -v docker >/dev/null 2>&1 || die "docker is required (https://docs.docker.com/get-docker/)"
docker compose version >/dev/null 2>&1 || die "the docker compose plugin is required"
command -v curl >/dev/null 2>&1 || die "curl is required"
[[ -n "${LOCALSTACK_AUTH_TOKEN:-}" ]] || die "LOCALSTACK_AUTH_TOKEN is not set; export it from your LocalStack account"
[[ -f "${CONFIG_FILE}" ]] || die "config file not found: ${CONFIG_FILE}"
CONFIG_FILE="$(realpath "${CONFIG_FILE}")"
[[ -d "${ROOT}/node_modules" ]] || die "run npm ci in ${ROOT} first"

export LOCALSTACK_IMAGE_TAG LOCALSTACK_VOLUME_DIR="${LOCALSTACK_VOLUME_DIR:-${HERE}/.volume}"
echo "Starting LocalStack ${LOCALSTACK_IMAGE_TAG}"
docker compose -f "${HERE}/docker-compose.yml" up -d

# Ready means every service the stack needs reports available or running, not just that the
# health endpoint answers.
echo -n "Waiting for ${ENDPOINT} "
ready=0
for _ in $(seq 1 90); do
  health="$(curl -fsS "${ENDPOINT}/_localstack/health" 2>/dev/null || true)"
  if [[ -n "${health}" ]] && node -e '
    const h = JSON.parse(process.argv[1]).services ?? {};
    const need = process.argv[2].split(",");
    process.exit(need.every((s) => ["available", "running"].includes(h[s])) ? 0 : 1);
  ' "${health}" "cloudformation,lambda,kinesis,dynamodb,s3,sqs,iam,sts,stepfunctions,scheduler"; then
    ready=1
    break
  fi
  echo -n "."
  sleep 2
done
echo
[[ "${ready}" == 1 ]] || die "LocalStack did not become ready; see: docker compose -f ${HERE}/docker-compose.yml logs"

# What cdklocal (aws-cdk-local >= 3) needs: it strips AWS_* variables except those allow-listed,
# and it needs an S3 endpoint with an ".s3." component to route asset uploads.
export AWS_ACCESS_KEY_ID="test"
export AWS_SECRET_ACCESS_KEY="test"
export AWS_DEFAULT_REGION="${AWS_DEFAULT_REGION:-us-east-1}"
export AWS_REGION="${AWS_DEFAULT_REGION}"
export AWS_ENDPOINT_URL="${ENDPOINT}"
export AWS_ENDPOINT_URL_S3="http://s3.localhost.localstack.cloud:${PORT}"
export AWS_ENVAR_ALLOWLIST="AWS_REGION,AWS_DEFAULT_REGION,AWS_ACCESS_KEY_ID,AWS_SECRET_ACCESS_KEY"
export CDK_DEFAULT_ACCOUNT="000000000000"
export CDK_DEFAULT_REGION="${AWS_DEFAULT_REGION}"
export CDK_DISABLE_CLI_TELEMETRY=true

cd "${ROOT}"
# aws-cdk-local wraps the aws-cdk CLI installed beside it: pin both (aws-cdk at the lockfile's version).
CDKLOCAL=(npx --yes --package "aws-cdk-local@${CDKLOCAL_VERSION}" --package "aws-cdk@${AWS_CDK_VERSION}" cdklocal)
CONTEXT=(-c "tidemark:configFile=${CONFIG_FILE}" -c "tidemark:removalPolicy=destroy")
"${CDKLOCAL[@]}" bootstrap --no-notices "${CONTEXT[@]}" "aws://${CDK_DEFAULT_ACCOUNT}/${AWS_DEFAULT_REGION}"
# The synthesized app goes to localstack/.cdk.out: e2e.ts reads the jobs' scheduled inputs from the
# very templates deployed here.
"${CDKLOCAL[@]}" deploy --all --require-approval never --no-notices "${CONTEXT[@]}" --output "${HERE}/.cdk.out" --outputs-file "${HERE}/.outputs.json"
echo "Deployed; stack outputs are in ${HERE}/.outputs.json, templates in ${HERE}/.cdk.out"

#!/usr/bin/env bash
# Checks the deployment files offline; CI runs it as `bash deployments/check.sh`.
#
#  1. deployments/Dockerfile COPYs go.work and every go.work module's go.mod (and
#     its go.sum, when the module has one) before `go mod download`, every file it
#     copies there exists, and its GO_VERSION is go.work's Go release.
#  2. docker-compose.yml is valid: `docker-compose config -q` (Debian's
#     docker-compose is installed when neither it nor `docker compose` is here).
#  3. deployments/ecs is `terraform fmt` clean, when terraform is installed; and
#     `terraform validate` passes, when the providers are already installed (the
#     registry is not reachable from CI, so usually that step says it skipped).
#
# DOCKERFILE=path checks another Dockerfile (this script's own test uses it).
set -euo pipefail
cd "$(dirname "$0")/.."

DOCKERFILE=${DOCKERFILE:-deployments/Dockerfile}
TF_DIR=deployments/ecs

step() { printf '\n== %s\n' "$*"; }

# work_modules prints each go.work `use` directory, without a leading ./.
work_modules() {
	go work edit -json go.work |
		sed -n 's/^[[:space:]]*"DiskPath": "\(.*\)",\{0,1\}$/\1/p' |
		sed -e 's#^\./##' -e 's#/$##'
}

# copied_before_download prints every source of every COPY that precedes the
# first `RUN ... go mod download`, and fails when there is no such RUN. COPYs
# from another stage or image (--from) do not count.
copied_before_download() {
	awk '
		sub(/\\[[:space:]]*$/, "") { buf = buf $0 " "; next }
		{ $0 = buf $0; buf = "" }
		NF == 0 || $1 ~ /^#/ { next }
		toupper($1) == "RUN" && /go mod download/ { found = 1; exit }
		toupper($1) == "COPY" || toupper($1) == "ADD" {
			from = 0
			for (i = 2; i <= NF; i++) if ($i ~ /^--from=/) from = 1
			if (from) next
			for (i = 2; i < NF; i++) if ($i !~ /^--/) { sub(/^\.\//, "", $i); print $i }
		}
		END { exit found ? 0 : 1 }
	' "$1"
}

check_dockerfile() {
	step "$DOCKERFILE: every go.work module's go.mod and go.sum before go mod download"
	local problems=() copied mod dir want src
	if ! copied=$(copied_before_download "$DOCKERFILE"); then
		echo "FAIL: $DOCKERFILE has no RUN ... go mod download" >&2
		return 1
	fi
	is_copied() { # a COPY source equal to $1, or a glob matching it
		local pat
		while IFS= read -r pat; do
			# shellcheck disable=SC2053 # $pat is a pattern on purpose
			[[ -n $pat && $1 == $pat ]] && return 0
		done <<<"$copied"
		return 1
	}
	is_copied go.work || problems+=("$DOCKERFILE: go.work is not COPYed before go mod download")
	[[ ! -f go.work.sum ]] || is_copied go.work.sum || problems+=("$DOCKERFILE: go.work.sum is not COPYed before go mod download")
	local modules
	modules=$(work_modules)
	[[ -n $modules ]] || problems+=("go.work: no modules in use (go work edit -json found none)")
	while IFS= read -r mod; do
		[[ -n $mod ]] || continue
		dir=${mod%/}/
		[[ $mod == . ]] && dir=
		if [[ ! -f ${dir}go.mod ]]; then
			problems+=("go.work: module ${mod} has no go.mod")
			continue
		fi
		for want in go.mod go.sum; do
			[[ -f $dir$want ]] || continue
			is_copied "$dir$want" || problems+=("$DOCKERFILE: module ${mod}: ${dir}${want} is not COPYed before go mod download")
		done
	done <<<"$modules"
	# A literal source that no longer exists breaks the build.
	while IFS= read -r src; do
		[[ -z $src || $src == *[*?[]* || -e $src ]] || problems+=("$DOCKERFILE: COPY source ${src} does not exist")
	done <<<"$copied"

	# golang images set GOTOOLCHAIN=local: the image's Go must satisfy go.work.
	local want_go have_go release
	want_go=$(sed -n 's/^go[[:space:]]\{1,\}\([0-9][0-9.]*\).*/\1/p' go.work)
	have_go=$(sed -n 's/^ARG GO_VERSION=\([0-9][0-9.]*\).*/\1/p' "$DOCKERFILE" | head -1)
	release=$(cut -d. -f1,2 <<<"$want_go")
	if [[ -z $have_go ]]; then
		problems+=("$DOCKERFILE: no ARG GO_VERSION=<version> default")
	elif [[ $(cut -d. -f1,2 <<<"$have_go") != "$release" ]] ||
		[[ $have_go == *.*.* && $(printf '%s\n' "$want_go" "$have_go" | sort -V | head -1) != "$want_go" ]]; then
		problems+=("$DOCKERFILE: GO_VERSION=$have_go does not build go.work's go $want_go (use $release, or a patch release >= $want_go)")
	fi

	if ((${#problems[@]})); then
		printf 'FAIL: %s\n' "${problems[@]}" >&2
		return 1
	fi
	echo "ok: $(wc -l <<<"$modules") modules, go $want_go, image Go $have_go"
}

compose() {
	if command -v docker-compose >/dev/null 2>&1; then
		docker-compose "$@"
	else
		docker compose "$@"
	fi
}

check_compose() {
	step "docker-compose.yml: docker-compose config"
	if ! command -v docker-compose >/dev/null 2>&1 && ! docker compose version >/dev/null 2>&1; then
		if [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null 2>&1; then
			echo "installing Debian's docker-compose..."
			local log
			log=$(mktemp)
			export DEBIAN_FRONTEND=noninteractive
			if ! { apt-get install -y -q docker-compose >"$log" 2>&1 ||
				{ apt-get update -q >>"$log" 2>&1 && apt-get install -y -q docker-compose >>"$log" 2>&1; }; }; then
				cat "$log" >&2
				rm -f "$log"
				echo "FAIL: apt-get install docker-compose" >&2
				return 1
			fi
			rm -f "$log"
		elif [[ ${CI:-} == true ]]; then
			echo "FAIL: neither docker-compose nor docker compose is installed, and apt-get is not usable" >&2
			return 1
		else
			echo "skipped: neither docker-compose nor docker compose is installed"
			return 0
		fi
	fi
	if ! compose -f docker-compose.yml config -q; then
		echo "FAIL: docker-compose.yml is invalid" >&2
		return 1
	fi
	echo "ok: $(compose version --short 2>/dev/null || compose version | head -1)"
}

# providers_installed succeeds when hashicorp/aws and hashicorp/random are in
# one of terraform's implied local mirrors, which init reads without the
# network. (A plugin cache is not enough: init still asks the registry.)
providers_installed() {
	local p d found
	for p in aws random; do
		found=
		for d in "$HOME/.terraform.d/plugins" \
			"$HOME/.local/share/terraform/plugins" /usr/local/share/terraform/plugins /usr/share/terraform/plugins; do
			[[ -d $d/registry.terraform.io/hashicorp/$p ]] && found=1
		done
		[[ -n $found ]] || return 1
	done
}

check_terraform() {
	step "$TF_DIR: terraform fmt, validate"
	if ! command -v terraform >/dev/null 2>&1; then
		echo "skipped: terraform is not installed"
		return 0
	fi
	# fmt parses every file, so it also catches HCL syntax errors.
	if ! terraform fmt -check -recursive -diff "$TF_DIR"; then
		echo "FAIL: run terraform fmt -recursive $TF_DIR" >&2
		return 1
	fi
	echo "ok: terraform fmt ($(terraform version | head -1))"
	if ! providers_installed; then
		echo "skipped: terraform validate needs the hashicorp/aws and hashicorp/random providers, not installed here;"
		echo "  where the registry is reachable: cd $TF_DIR && terraform init -backend=false && terraform validate"
		return 0
	fi
	# In a copy, so that init writes no .terraform or lock file into the tree.
	local tmp ok=1
	tmp=$(mktemp -d)
	cp "$TF_DIR"/*.tf "$tmp"/
	(cd "$tmp" && timeout 120 terraform init -backend=false -input=false >/dev/null && terraform validate) || ok=
	rm -rf "$tmp"
	if [[ -z $ok ]]; then
		echo "FAIL: terraform validate $TF_DIR" >&2
		return 1
	fi
}

# Each check reports every problem it finds and returns non-zero; set -e does
# not apply inside them (they run under ||), so they test each step explicitly.
start=$SECONDS
status=0
check_dockerfile || status=1
check_compose || status=1
check_terraform || status=1
echo
if ((status)); then
	echo "deployments/check.sh: FAILED ($((SECONDS - start)) s)" >&2
else
	echo "deployments/check.sh: ok ($((SECONDS - start)) s)"
fi
exit $status

#!/bin/sh
# rootless-k8s installer: downloads the release's SHA256SUMS and checks its ed25519 signature with
# the release key written into this script (with openssl 3; without it, says so and checks the
# SHA-256 only), downloads the binary, verifies its SHA-256, installs it in a folder of yours, then
# hands over to `rootless-k8s install`.
#
#   curl -fsSL https://dl.rootless-k8s.dev/install.sh | sh
#   curl -fsSL https://dl.rootless-k8s.dev/install.sh | sh -s -- --version 0.2.0 --no-start
#
# Options (after `sh -s --`):
#   --version X     install version X (default: the latest, read from <base>/latest.txt)
#   --no-start      only install the binary; do not run `rootless-k8s install`
#   -y, --yes       passed to `rootless-k8s install`: accept the defaults, ask nothing
#   --modify-path   add the install folder to PATH in your shell's rc file (backed up first)
#   --insecure-http accept a plain http:// download URL (refused otherwise)
#   -h, --help      show this help
#   -- ARGS...      pass the rest to `rootless-k8s install` (e.g. -- --runtime crio)
# Environment:
#   ROOTLESS_K8S_VERSION       same as --version
#   ROOTLESS_K8S_DOWNLOAD_URL  <base> of the release layout (default https://dl.rootless-k8s.dev)
#   ROOTLESS_K8S_INSTALL_DIR   where the binary goes (default ~/.local/bin)
#   ROOTLESS_K8S_FORCE_ROOT=1  install even when run as root (the node itself still refuses root)
# Exit codes: 0 ok, 1 failure, 2 bad usage, 3 refused, 4 verification failed, 5 download failed.
#
# The whole script is one { ... } block of function definitions with the call to `main` at its end:
# the shell reads the block to its closing brace before running any of it, so a download cut short
# (even inside the last line) runs nothing.
{
set -eu

ROOTLESS_K8S_DEFAULT_URL=https://dl.rootless-k8s.dev
# The ed25519 public key that signs releases (base64 of its SPKI DER form), written in by
# scripts/release.sh; empty in the repository's copy, which therefore installs nothing.
ROOTLESS_K8S_RELEASE_KEY=

say() { printf '%s\n' "$*"; }

# die MESSAGE [FIX] [EXIT_CODE]
die() {
  printf 'error: %s\n' "$1" >&2
  if [ -n "${2:-}" ]; then printf 'fix: %s\n' "$2" >&2; fi
  exit "${3:-1}"
}

usage() {
  cat <<'EOF'
rootless-k8s installer

usage: curl -fsSL <base>/install.sh | sh -s -- [options]

Options:
  --version X     install version X (default: the latest)
  --no-start      only install the binary; do not run `rootless-k8s install`
  -y, --yes       passed to `rootless-k8s install`: accept the defaults, ask nothing
  --modify-path   add the install folder to PATH in your shell's rc file (backed up first)
  --insecure-http accept a plain http:// download URL (refused otherwise)
  -h, --help      show this help
  -- ARGS...      pass the rest to `rootless-k8s install` (e.g. -- --runtime crio)

Environment:
  ROOTLESS_K8S_VERSION       same as --version
  ROOTLESS_K8S_DOWNLOAD_URL  base URL of the releases (mirrors)
  ROOTLESS_K8S_INSTALL_DIR   where the binary goes (default ~/.local/bin)
  ROOTLESS_K8S_FORCE_ROOT=1  install even when run as root
EOF
}

parse_args() {
  while [ $# -gt 0 ]; do
    case $1 in
      --version)
        [ $# -ge 2 ] || die "option --version needs a value" "--version 0.2.0" 2
        opt_version=$2
        shift 2
        ;;
      --version=*) opt_version=${1#--version=}; shift ;;
      -y | --yes) opt_yes=1; shift ;;
      --no-start) opt_no_start=1; shift ;;
      --modify-path) opt_modify_path=1; shift ;;
      --insecure-http) opt_insecure_http=1; shift ;;
      -h | --help) usage; exit 0 ;;
      --) shift; install_args_count=$#; break ;;
      *) die "unknown option \"$1\"" "see the options: sh install.sh --help" 2 ;;
    esac
  done
}

# Sets $arch (amd64 or arm64) from `uname -sm`, or refuses this platform.
detect_platform() {
  platform=$(uname -sm)
  os=${platform% *}
  machine=${platform##* }
  [ "$os" = Linux ] || die "rootless-k8s runs on Linux only; this is $os" "run it on a Linux host or VM" 3
  case $machine in
    x86_64 | amd64) arch=amd64 ;;
    aarch64 | arm64) arch=arm64 ;;
    *) die "unsupported CPU architecture $machine: rootless-k8s is built for x86_64 (amd64) and aarch64 (arm64)" "use an x86_64 or aarch64 Linux machine" 3 ;;
  esac
}

refuse_root() {
  [ "$(id -u)" = 0 ] || return 0
  [ "${ROOTLESS_K8S_FORCE_ROOT:-}" = 1 ] && return 0
  die "refusing to run as root: rootless-k8s installs and runs the node as an ordinary user" \
    "run this as the user who will own the node (without sudo); ROOTLESS_K8S_FORCE_ROOT=1 installs the binary as root anyway" 3
}

# Sets $downloader to curl or wget, whichever is installed (curl first).
pick_downloader() {
  if command -v curl >/dev/null 2>&1; then
    downloader=curl
  elif command -v wget >/dev/null 2>&1; then
    downloader=wget
  else
    die "curl is not installed, and neither is wget: one of them is needed to download rootless-k8s" \
      "install curl (sudo apt-get install curl, or sudo dnf install curl), then run this again" 1
  fi
}

# Sets $hasher to the SHA-256 tool: sha256sum (coreutils) or shasum -a 256 (perl).
pick_hasher() {
  if command -v sha256sum >/dev/null 2>&1; then
    hasher=sha256sum
  elif command -v shasum >/dev/null 2>&1; then
    hasher="shasum -a 256"
  else
    die "neither sha256sum nor shasum is installed, so the download cannot be verified" \
      "install coreutils (sha256sum) or perl (shasum), then run this again" 1
  fi
}

sha256_of() {
  # $hasher is one or three words ("shasum -a 256"): split on purpose.
  # shellcheck disable=SC2086
  set -- $hasher "$1"
  "$@" | cut -d ' ' -f 1
}

# fetch_to URL FILE: downloads URL into FILE; fails (status 1) without a message of its own.
fetch_to() {
  dl_url=$1
  dl_file=$2
  case $downloader in
    curl)
      # Over https, neither the request nor a redirect may use anything else. A progress bar only on a terminal.
      set -- --fail --location --retry 3 --connect-timeout 20 --show-error --output "$dl_file" "$dl_url"
      case $dl_url in https://*) set -- --proto '=https' --proto-redir '=https' "$@" ;; esac
      if [ -t 2 ]; then set -- --progress-bar "$@"; else set -- --silent "$@"; fi
      curl "$@"
      ;;
    wget)
      set -- --quiet --tries=3 --timeout=20 --output-document="$dl_file" "$dl_url"
      if [ -t 2 ]; then set -- --show-progress "$@"; fi
      wget "$@"
      ;;
  esac
}

# download URL FILE: fails with the network exit code and the URL.
download() {
  fetch_to "$1" "$2" || die "could not download $1" "check the network (and https_proxy), or ROOTLESS_K8S_DOWNLOAD_URL ($base)" 5
}

# Refuses a download URL that is not https, unless --insecure-http.
check_base() {
  case $base in
    https://*) ;;
    http://*)
      [ "$opt_insecure_http" = 1 ] ||
        die "refused the plain-http download URL $base: anyone on the path could swap what is downloaded" \
          "use an https URL, or pass --insecure-http to accept it (sh -s -- --insecure-http)" 2
      ;;
    *) die "the download URL must be an https:// URL, not \"$base\"" "set ROOTLESS_K8S_DOWNLOAD_URL to the https base of the releases" 2 ;;
  esac
}

# Refuses, before any download, a copy of this script without the release key (the repository's).
require_release_key() {
  [ -n "$ROOTLESS_K8S_RELEASE_KEY" ] ||
    die "this install.sh carries no release key (it was not made by scripts/release.sh), so the release cannot be verified" \
      "use the install.sh of the release base: curl -fsSL $base/install.sh | sh" 4
}

# Whether `openssl` is OpenSSL 3 or newer (its pkeyutl verifies ed25519 with -rawin).
have_openssl3() {
  command -v openssl >/dev/null 2>&1 || return 1
  case $(openssl version 2>/dev/null) in
    "OpenSSL "[3-9].* | "OpenSSL "[1-9][0-9]*) return 0 ;;
  esac
  return 1
}

# Checks SHA256SUMS.sig against the release key of this script, with openssl 3; without it, says
# plainly that only the SHA-256 is checked. Sets $signature_checked.
verify_signature() {
  fetch_to "$base/$version/SHA256SUMS.sig" "$workdir/SHA256SUMS.sig" ||
    die "release $version at $base is not signed: $base/$version/SHA256SUMS.sig could not be downloaded; nothing was installed" \
      "use the official download URL, or a mirror that copies SHA256SUMS.sig too" 4
  if have_openssl3; then
    printf -- '-----BEGIN PUBLIC KEY-----\n%s\n-----END PUBLIC KEY-----\n' "$ROOTLESS_K8S_RELEASE_KEY" >"$workdir/release-key.pem"
    openssl pkeyutl -verify -pubin -inkey "$workdir/release-key.pem" -rawin -in "$workdir/SHA256SUMS" -sigfile "$workdir/SHA256SUMS.sig" >/dev/null 2>&1 ||
      die "the signature of $base/$version/SHA256SUMS does not verify with the release key in this install.sh; nothing was installed" \
        "the download URL ($base) serves checksums the release key did not sign: use the official one, or report it" 4
    say "verified the ed25519 signature of SHA256SUMS"
  else
    printf 'warning: %s\n' "openssl 3 is not installed, so the release signature cannot be checked here: only the SHA-256 of the binary is checked, against a SHA256SUMS only as trustworthy as $base; install openssl 3 to have the signature checked" >&2
  fi
}

valid_version() {
  case $1 in
    '' | *[!0-9A-Za-z.+-]*) return 1 ;;
    [0-9]*.[0-9]*.[0-9]*) return 0 ;;
    *) return 1 ;;
  esac
}

# Sets $version: --version, else ROOTLESS_K8S_VERSION, else <base>/latest.txt.
resolve_version() {
  version=${opt_version:-${ROOTLESS_K8S_VERSION:-}}
  if [ -n "$version" ]; then
    version=${version#v}
    valid_version "$version" || die "\"$version\" is not a release version" "give one like --version 0.2.0" 2
    version_source=pinned
    return
  fi
  download "$base/latest.txt" "$workdir/latest.txt"
  version=$(tr -d ' \t\r\n' <"$workdir/latest.txt")
  valid_version "$version" || die "$base/latest.txt does not hold a release version" "check ROOTLESS_K8S_DOWNLOAD_URL ($base), or pin one with --version X" 4
  version_source=latest
}

# Sets $expected: the SHA-256 of our binary, from the release's SHA256SUMS.
read_expected_sum() {
  download "$base/$version/SHA256SUMS" "$workdir/SHA256SUMS"
  expected=$(awk -v f="$binary_name" '$2 == f || $2 == "*" f { print $1; exit }' "$workdir/SHA256SUMS")
  case $expected in
    [0-9a-f]*) [ ${#expected} -eq 64 ] || expected="" ;;
    *) expected="" ;;
  esac
  [ -n "$expected" ] || die "$base/$version/SHA256SUMS has no checksum for $binary_name" "this release has no $arch binary, or the mirror is incomplete: try another --version or the default download URL" 4
}

# Sets $dir: the absolute install folder.
resolve_install_dir() {
  if [ -n "${ROOTLESS_K8S_INSTALL_DIR:-}" ]; then
    dir=$ROOTLESS_K8S_INSTALL_DIR
  else
    [ -n "${HOME:-}" ] || die "HOME is not set, so the default install folder ~/.local/bin is unknown" "set ROOTLESS_K8S_INSTALL_DIR=/some/folder" 2
    dir=$HOME/.local/bin
  fi
  case $dir in /*) ;; *) dir=$(pwd)/$dir ;; esac
  dir=${dir%/}
}

# Puts the verified download in place: a temp file in the same folder, a run of `--version`,
# then one rename, so the folder never holds a partial binary.
install_binary() {
  mkdir -p "$dir" 2>/dev/null || die "cannot create $dir" "choose a folder you own with ROOTLESS_K8S_INSTALL_DIR" 3
  [ -w "$dir" ] || die "$dir is not writable by $(id -un)" "choose a folder you own with ROOTLESS_K8S_INSTALL_DIR" 3
  tmpbin=$(mktemp "$dir/.rootless-k8s.install.XXXXXX")
  cp "$workdir/$binary_name" "$tmpbin"
  chmod 755 "$tmpbin"
  ran=$(ROOTLESS_K8S_NO_UPDATE_CHECK=1 "$tmpbin" --version 2>&1) ||
    die "the downloaded binary does not run on this system: $(printf '%s' "$ran" | head -n 1)" \
      "rootless-k8s needs glibc 2.28 or newer (Debian 10+, Ubuntu 20.04+, RHEL 8+); musl (Alpine) is not supported" 1
  [ "$ran" = "rootless-k8s $version" ] || die "the downloaded binary says \"$ran\", expected \"rootless-k8s $version\"" "report this release as broken; pin another with --version X" 4
  mv -f "$tmpbin" "$dir/rootless-k8s"
  tmpbin=""
}

on_path() {
  case ":${PATH:-}:" in *":$1:"*) return 0 ;; esac
  return 1
}

user_shell() { basename "${SHELL:-sh}"; }

rc_file_for() {
  case $1 in
    bash) printf '%s' "$HOME/.bashrc" ;;
    zsh) printf '%s' "${ZDOTDIR:-$HOME}/.zshrc" ;;
    fish) printf '%s' "${XDG_CONFIG_HOME:-$HOME/.config}/fish/conf.d/rootless-k8s.fish" ;;
    *) printf '%s' "$HOME/.profile" ;;
  esac
}

# The line that puts $dir on PATH in the given shell.
path_line_for() {
  quoted=$(printf '%s' "$dir" | sed 's/[\\"$`]/\\&/g')
  # The line is for the rc file: $PATH stays unexpanded on purpose.
  # shellcheck disable=SC2016
  case $1 in
    fish) printf 'fish_add_path "%s"' "$quoted" ;;
    *) printf 'export PATH="%s:$PATH"' "$quoted" ;;
  esac
}

print_path_hint() {
  sh_name=$(user_shell)
  say ""
  say "$dir is not on your PATH. For $sh_name, add this line to $(rc_file_for "$sh_name"):"
  say ""
  say "  $(path_line_for "$sh_name")"
  say ""
  say "then open a new shell (or run the line in this one). --modify-path does it for you."
}

modify_path() {
  sh_name=$(user_shell)
  rc=$(rc_file_for "$sh_name")
  line=$(path_line_for "$sh_name")
  if [ -f "$rc" ] && grep -Fqx "$line" "$rc"; then
    say "$rc already puts $dir on PATH; open a new shell to use it."
    return
  fi
  mkdir -p "$(dirname "$rc")"
  if [ -f "$rc" ]; then
    backup="$rc.rootless-k8s-backup.$(date +%Y%m%d%H%M%S)"
    cp -p "$rc" "$backup"
    say "backed up $rc to $backup"
  fi
  printf '\n# Added by the rootless-k8s installer\n%s\n' "$line" >>"$rc"
  say "added $dir to PATH in $rc; open a new shell to use it (or run: $line)"
}

cleanup() {
  if [ -n "${tmpbin:-}" ]; then rm -f "$tmpbin"; fi
  if [ -n "${workdir:-}" ]; then rm -rf "$workdir"; fi
}

# Runs `rootless-k8s install [--yes] [ARGS after --]`, with the terminal as its input when this
# script is piped into sh. Arguments: the ones after `--`.
hand_over() {
  if [ "$opt_no_start" = 1 ]; then
    cmd=rootless-k8s
    on_path "$dir" || cmd=$dir/rootless-k8s
    say "Next: \`$cmd doctor\` checks this host, \`$cmd install\` sets up the node."
    return
  fi
  if [ "$opt_yes" = 1 ]; then set -- --yes "$@"; fi
  set -- install "$@"
  say "Running: rootless-k8s $*"
  cleanup
  trap - EXIT
  if [ ! -t 0 ] && (: </dev/tty) 2>/dev/null; then
    exec "$dir/rootless-k8s" "$@" </dev/tty
  fi
  exec "$dir/rootless-k8s" "$@"
}

main() {
  opt_version="" opt_yes=0 opt_no_start=0 opt_modify_path=0 opt_insecure_http=0
  workdir="" tmpbin="" install_args_count=0
  parse_args "$@"
  # Keep only the arguments after `--`: they go to `rootless-k8s install`.
  shift $(($# - install_args_count))
  trap cleanup EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM

  detect_platform
  refuse_root
  pick_downloader
  pick_hasher
  base=${ROOTLESS_K8S_DOWNLOAD_URL:-$ROOTLESS_K8S_DEFAULT_URL}
  base=${base%/}
  check_base
  require_release_key
  binary_name=rootless-k8s-linux-$arch
  resolve_install_dir
  workdir=$(mktemp -d)

  resolve_version
  say "rootless-k8s $version ($version_source) for linux-$arch, from $base"
  read_expected_sum
  verify_signature
  if [ -f "$dir/rootless-k8s" ] && [ "$(sha256_of "$dir/rootless-k8s")" = "$expected" ]; then
    say "$dir/rootless-k8s is already this version (same SHA-256)"
  else
    download "$base/$version/$binary_name" "$workdir/$binary_name"
    actual=$(sha256_of "$workdir/$binary_name")
    [ "$actual" = "$expected" ] || die "checksum mismatch for $binary_name: got $actual, SHA256SUMS says $expected; nothing was installed" \
      "run this again (a download may have been cut); if it persists, the mirror ($base) serves a tampered or broken file" 4
    say "verified SHA-256 $actual"
    install_binary
    say "installed rootless-k8s $version to $dir/rootless-k8s"
  fi

  if ! on_path "$dir"; then
    if [ "$opt_modify_path" = 1 ]; then modify_path; else print_path_hint; fi
  fi
  hand_over "$@"
}

main "$@"
}

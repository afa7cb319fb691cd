#!/bin/sh
# rootless-k8s installer: downloads the release's SHA256SUMS and checks its ed25519 signature with
# the release key written into this script (with OpenSSL 3; without it, refuses unless told
# ROOTLESS_K8S_SKIP_SIGNATURE_CHECK=1), downloads the binary, verifies its SHA-256, installs it in a
# folder of yours, then hands over to `rootless-k8s install`. Every download has a size cap and a
# deadline.
#
#   curl -fsSL https://dl.rootless-k8s.dev/install.sh | sh
#   curl -fsSL https://dl.rootless-k8s.dev/install.sh | sh -s -- --version 0.2.0 --no-start
#
# Options (after `sh -s --`):
#   --version X     install version X (default: the latest, read from <base>/latest.txt)
#   --allow-downgrade  let --version X replace an installed rootless-k8s that is newer
#   --no-start      only install the binary; do not run `rootless-k8s install`
#   -y, --yes       passed to `rootless-k8s install`: accept the defaults, ask nothing
#   --modify-path   add the install folder to PATH in your shell's rc file (backed up first)
#   --insecure-http accept a plain http:// download URL (refused otherwise)
#   -h, --help      show this help
#   -- ARGS...      pass the rest to `rootless-k8s install` (e.g. -- --runtime crio)
# Environment:
#   ROOTLESS_K8S_VERSION       same as --version
#   ROOTLESS_K8S_ALLOW_DOWNGRADE=1  same as --allow-downgrade
#   ROOTLESS_K8S_DOWNLOAD_URL  <base> of the release layout (default https://dl.rootless-k8s.dev)
#   ROOTLESS_K8S_INSTALL_DIR   where the binary goes (default ~/.local/bin)
#   ROOTLESS_K8S_FORCE_ROOT=1  install even when run as root (the node itself still refuses root)
#   ROOTLESS_K8S_MAX_BINARY_MIB      size cap of the binary's download in MiB (default 256; the
#                                    small files latest.txt, SHA256SUMS, SHA256SUMS.sig: 1 MiB)
#   ROOTLESS_K8S_DOWNLOAD_TIMEOUT    deadline of the binary's download in seconds (default 1800; the
#                                    small files: 60, or this when it is less)
#   ROOTLESS_K8S_SKIP_SIGNATURE_CHECK=1  where no OpenSSL 3 is installed (OpenSSL 1.1 cannot verify
#                                    ed25519), install with the SHA-256 check only instead of refusing
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
  --allow-downgrade  let --version X replace an installed rootless-k8s that is newer
  --no-start      only install the binary; do not run `rootless-k8s install`
  -y, --yes       passed to `rootless-k8s install`: accept the defaults, ask nothing
  --modify-path   add the install folder to PATH in your shell's rc file (backed up first)
  --insecure-http accept a plain http:// download URL (refused otherwise)
  -h, --help      show this help
  -- ARGS...      pass the rest to `rootless-k8s install` (e.g. -- --runtime crio)

Environment:
  ROOTLESS_K8S_VERSION               same as --version
  ROOTLESS_K8S_ALLOW_DOWNGRADE=1     same as --allow-downgrade
  ROOTLESS_K8S_DOWNLOAD_URL          base URL of the releases (mirrors)
  ROOTLESS_K8S_INSTALL_DIR           where the binary goes (default ~/.local/bin)
  ROOTLESS_K8S_FORCE_ROOT=1          install even when run as root
  ROOTLESS_K8S_MAX_BINARY_MIB        size cap of the binary's download, MiB (default 256)
  ROOTLESS_K8S_DOWNLOAD_TIMEOUT      deadline of the binary's download, seconds (default 1800)
  ROOTLESS_K8S_SKIP_SIGNATURE_CHECK=1  without OpenSSL 3, install on the SHA-256 check alone
                                     (the release signature is then NOT checked)
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
      --allow-downgrade) opt_allow_downgrade=1; shift ;;
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

# Sets the limits of the downloads: $binary_cap (bytes) and $binary_deadline (seconds) for the
# binary, from ROOTLESS_K8S_MAX_BINARY_MIB and ROOTLESS_K8S_DOWNLOAD_TIMEOUT; $small_cap (1 MiB) and
# $small_deadline (60 s, or less) for latest.txt, SHA256SUMS and SHA256SUMS.sig.
read_limits() {
  max_mib=${ROOTLESS_K8S_MAX_BINARY_MIB:-256}
  binary_deadline=${ROOTLESS_K8S_DOWNLOAD_TIMEOUT:-1800}
  whole_number "$max_mib" ||
    die "ROOTLESS_K8S_MAX_BINARY_MIB must be a whole number of MiB (1 to 999999), not \"$max_mib\"" "unset it (the default is 256), or set e.g. ROOTLESS_K8S_MAX_BINARY_MIB=512" 2
  whole_number "$binary_deadline" ||
    die "ROOTLESS_K8S_DOWNLOAD_TIMEOUT must be a whole number of seconds (1 to 999999), not \"$binary_deadline\"" "unset it (the default is 1800), or set e.g. ROOTLESS_K8S_DOWNLOAD_TIMEOUT=3600" 2
  binary_cap=$((max_mib * 1048576))
  small_cap=1048576
  small_deadline=60
  if [ "$binary_deadline" -lt "$small_deadline" ]; then small_deadline=$binary_deadline; fi
}

whole_number() {
  case $1 in '' | *[!0-9]* | 0*) return 1 ;; esac
  [ ${#1} -le 6 ]
}

# fetch_stream URL CAP DEADLINE: writes the body of URL to stdout; the downloader's exit status.
# Without a terminal, its error line goes to $workdir/download.err (for the one-line error).
fetch_stream() {
  fs_url=$1
  fs_cap=$2
  fs_deadline=$3
  case $downloader in
    curl)
      # Over https, neither the request nor a redirect may use anything else. --max-time bounds each
      # try and --retry-max-time the retries, so DEADLINE bounds the whole download; a connection
      # that sends nothing for 30 s is dropped. A progress bar only on a terminal.
      set -- --fail --location --retry 3 --retry-max-time "$fs_deadline" --max-time "$fs_deadline" --connect-timeout 20 \
        --speed-limit 1 --speed-time 30 --max-filesize "$fs_cap" --show-error "$fs_url"
      case $fs_url in https://*) set -- --proto '=https' --proto-redir '=https' "$@" ;; esac
      if [ -t 2 ]; then
        curl --progress-bar "$@"
      else
        curl --silent "$@" 2>"$workdir/download.err"
      fi
      ;;
    wget)
      # wget has no deadline of its own: timeout(1) (coreutils, busybox) gives it one.
      set -- --quiet --tries=3 --timeout=20 --output-document=- "$fs_url"
      if [ -t 2 ]; then set -- --show-progress "$@"; fi
      if command -v timeout >/dev/null 2>&1; then set -- timeout "$fs_deadline" wget "$@"; else set -- wget "$@"; fi
      if [ -t 2 ]; then "$@"; else "$@" 2>"$workdir/download.err"; fi
      ;;
  esac
}

# fetch_to KIND URL FILE: downloads URL into FILE within the limits of KIND (binary or small).
# Status: 0 done, 2 larger than the cap, 3 past the deadline or stalled, 1 any other failure; no
# message of its own.
fetch_to() {
  if [ "$1" = binary ]; then dl_cap=$binary_cap dl_deadline=$binary_deadline; else dl_cap=$small_cap dl_deadline=$small_deadline; fi
  dl_url=$2
  dl_file=$3
  : >"$workdir/download.err"
  rm -f "$workdir/download.rc"
  # The body goes through head -c, which stops one byte past the cap (the downloader then fails
  # writing): --max-filesize alone trusts a Content-Length, which an endless body does not send.
  {
    if fetch_stream "$dl_url" "$dl_cap" "$dl_deadline"; then dl_rc=0; else dl_rc=$?; fi
    printf '%s\n' "$dl_rc" >"$workdir/download.rc"
  } | head -c $((dl_cap + 1)) >"$dl_file"
  dl_rc=$(cat "$workdir/download.rc" 2>/dev/null) || dl_rc=1
  dl_size=$(wc -c <"$dl_file" | tr -d ' ')
  [ "$dl_size" -le "$dl_cap" ] || return 2
  case $dl_rc in
    0) return 0 ;;
    63) return 2 ;;        # curl: the Content-Length is over --max-filesize
    28 | 124) return 3 ;;  # curl: --max-time or --speed-time; timeout(1): the deadline
  esac
  return 1
}

# download KIND URL FILE: fetch_to, or a one-line error and its fix (exit 5).
download() {
  dl_status=0
  fetch_to "$@" || dl_status=$?
  [ "$dl_status" = 0 ] || download_failed "$dl_status" "$1" "$2"
}

# download_failed STATUS KIND URL: dies saying why the download of URL failed (fetch_to's status).
download_failed() {
  case $1 in
    2)
      if [ "$2" = binary ]; then
        die "$3 is larger than $max_mib MiB, far more than a rootless-k8s binary; stopped there and removed what came, nothing was installed" \
          "the download URL ($base) serves something else: use the official one; if a real release is this large, raise the cap, e.g. ROOTLESS_K8S_MAX_BINARY_MIB=$((max_mib * 2))" 5
      fi
      die "$3 is larger than 1 MiB, far more than that file of a release; stopped there and removed what came, nothing was installed" \
        "the download URL ($base) does not serve a rootless-k8s release: use the official one (unset ROOTLESS_K8S_DOWNLOAD_URL)" 5
      ;;
    3)
      if [ "$2" = binary ]; then
        die "$3 did not finish within ${binary_deadline} s (or stalled); removed what came, nothing was installed" \
          "check the network (and https_proxy); on a slow link allow more time, e.g. ROOTLESS_K8S_DOWNLOAD_TIMEOUT=$((binary_deadline * 2))" 5
      fi
      die "$3 did not finish within ${small_deadline} s (or stalled); nothing was installed" \
        "check the network (and https_proxy), or ROOTLESS_K8S_DOWNLOAD_URL ($base)" 5
      ;;
  esac
  dl_err=$(tail -n 1 "$workdir/download.err" 2>/dev/null | tr -d '\r') || dl_err=""
  die "could not download $3${dl_err:+ ($dl_err)}" "check the network (and https_proxy), or ROOTLESS_K8S_DOWNLOAD_URL ($base)" 5
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

# Sets $openssl to a command that can verify the release signature: OpenSSL 3 or newer, as
# `openssl` or as `openssl3` (EPEL's package on RHEL 8). ed25519 verification from the command line
# needs `pkeyutl -rawin`, new in OpenSSL 3.0: OpenSSL 1.1.1 (Debian 10/11, Ubuntu 20.04, RHEL 8) has
# no -rawin and its `dgst` refuses ed25519 ("only oneshot supported"), and no other tool those
# systems ship verifies a raw ed25519 signature. Without one this refuses, before any download,
# unless ROOTLESS_K8S_SKIP_SIGNATURE_CHECK=1 (then $openssl stays empty and a warning says so).
pick_verifier() {
  openssl=""
  found=""
  for c in openssl openssl3; do
    command -v "$c" >/dev/null 2>&1 || continue
    v=$("$c" version 2>/dev/null | awk 'NR == 1 { print $1, $2 }') || v=""
    case $v in
      "OpenSSL "[3-9].* | "OpenSSL "[1-9][0-9]*)
        openssl=$c
        return 0
        ;;
    esac
    found="${found:+$found, }${v:-$c (no version)}"
  done
  [ "${ROOTLESS_K8S_SKIP_SIGNATURE_CHECK:-}" = 1 ] && return 0
  die "the release signature (ed25519) can only be checked with OpenSSL 3 or newer, and this machine has ${found:-no openssl}; nothing was downloaded or installed" \
    "install OpenSSL 3 (RHEL 8: the openssl3 package of EPEL), or accept the SHA-256 check alone: curl -fsSL $base/install.sh | ROOTLESS_K8S_SKIP_SIGNATURE_CHECK=1 sh" 4
}

# Checks SHA256SUMS.sig against the release key of this script, with OpenSSL 3; where there is
# none and ROOTLESS_K8S_SKIP_SIGNATURE_CHECK=1 (see pick_verifier), says plainly that it does not.
verify_signature() {
  if [ -z "$openssl" ]; then
    printf 'warning: %s\n' "ROOTLESS_K8S_SKIP_SIGNATURE_CHECK=1 and no OpenSSL 3: the release signature is NOT checked; the binary is checked only against the SHA-256 in a SHA256SUMS as trustworthy as $base" >&2
    return 0
  fi
  sig_status=0
  fetch_to small "$base/$version/SHA256SUMS.sig" "$workdir/SHA256SUMS.sig" || sig_status=$?
  case $sig_status in
    0) ;;
    1)
      die "release $version at $base is not signed: $base/$version/SHA256SUMS.sig could not be downloaded; nothing was installed" \
        "use the official download URL, or a mirror that copies SHA256SUMS.sig too" 4
      ;;
    *) download_failed "$sig_status" small "$base/$version/SHA256SUMS.sig" ;;
  esac
  printf -- '-----BEGIN PUBLIC KEY-----\n%s\n-----END PUBLIC KEY-----\n' "$ROOTLESS_K8S_RELEASE_KEY" >"$workdir/release-key.pem"
  "$openssl" pkeyutl -verify -pubin -inkey "$workdir/release-key.pem" -rawin -in "$workdir/SHA256SUMS" -sigfile "$workdir/SHA256SUMS.sig" >/dev/null 2>&1 ||
    die "the signature of $base/$version/SHA256SUMS does not verify with the release key in this install.sh; nothing was installed" \
      "the download URL ($base) serves checksums the release key did not sign: use the official one, or report it" 4
  say "verified the ed25519 signature of SHA256SUMS"
}

# The signed SHA256SUMS must be release $version's: scripts/release.sh lists the file VERSION (the
# version and a newline) in it, which puts the version under the signature. A base that serves one
# genuine release under another's name (an older one, to hold a fix back) is refused here.
check_signed_version() {
  printf '%s\n' "$version" >"$workdir/VERSION"
  named=$(awk '$2 == "VERSION" || $2 == "*VERSION" { print $1; exit }' "$workdir/SHA256SUMS")
  [ "$named" = "$(sha256_of "$workdir/VERSION")" ] ||
    die "$base/$version/SHA256SUMS is not release $version's: its VERSION line names another version, or none; nothing was installed" \
      "the download URL ($base) serves one release under another's name (a stale or hostile mirror): use the official one, or report it" 4
}

# version_lt A B: whether release version A is older than B (semver: x.y.z numerically, then a
# pre-release is older than its release; build metadata after + does not count).
version_lt() {
  awk -v a="$1" -v b="$2" '
    function core(v) { sub(/\+.*/, "", v); sub(/-.*/, "", v); return v }
    function pre(v) { sub(/\+.*/, "", v); return index(v, "-") ? substr(v, index(v, "-") + 1) : "" }
    BEGIN {
      split(core(a), x, "."); split(core(b), y, ".")
      for (i = 1; i <= 3; i++) { if (x[i] + 0 < y[i] + 0) exit 0; if (x[i] + 0 > y[i] + 0) exit 1 }
      pa = pre(a); pb = pre(b)
      if (pa == "" || pa == pb) exit 1
      if (pb == "") exit 0
      exit !(pa < pb)
    }'
}

# Sets $installed: the version of the rootless-k8s already in $dir (as it reports it), or "".
read_installed_version() {
  installed=""
  [ -f "$dir/rootless-k8s" ] && [ -x "$dir/rootless-k8s" ] || return 0
  # Bounded where timeout(1) exists (coreutils, busybox): a binary that hangs counts as no version.
  if command -v timeout >/dev/null 2>&1; then
    installed=$(ROOTLESS_K8S_NO_UPDATE_CHECK=1 timeout 30 "$dir/rootless-k8s" --version </dev/null 2>/dev/null) || installed=""
  else
    installed=$(ROOTLESS_K8S_NO_UPDATE_CHECK=1 "$dir/rootless-k8s" --version </dev/null 2>/dev/null) || installed=""
  fi
  installed=${installed#rootless-k8s }
  valid_version "$installed" || installed=""
}

# An installed rootless-k8s newer than $version is never replaced unless asked: a pinned older
# version is refused without --allow-downgrade; an older latest.txt keeps the installed binary
# (sets $keep_installed), as a stale or hostile base must not take a user back.
refuse_downgrade() {
  keep_installed=0
  read_installed_version
  [ -n "$installed" ] && version_lt "$version" "$installed" || return 0
  if [ "$version_source" = latest ]; then
    printf 'warning: %s
' "$base/latest.txt names $version, older than the installed $dir/rootless-k8s $installed: keeping $installed (a base whose latest goes back is stale or hostile; --version $version --allow-downgrade goes back on purpose)" >&2
    keep_installed=1
    return 0
  fi
  if [ "$opt_allow_downgrade" = 1 ] || [ "${ROOTLESS_K8S_ALLOW_DOWNGRADE:-}" = 1 ]; then
    say "going back from rootless-k8s $installed to $version (--allow-downgrade)"
    return 0
  fi
  die "$dir/rootless-k8s is $installed, newer than $version; nothing was downloaded or installed" \
    "to go back on purpose: sh -s -- --version $version --allow-downgrade (or ROOTLESS_K8S_ALLOW_DOWNGRADE=1)" 3
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
  download small "$base/latest.txt" "$workdir/latest.txt"
  version=$(tr -d ' \t\r\n' <"$workdir/latest.txt")
  valid_version "$version" || die "$base/latest.txt does not hold a release version" "check ROOTLESS_K8S_DOWNLOAD_URL ($base), or pin one with --version X" 4
  version_source=latest
}

# Sets $expected: the SHA-256 of our binary, from the release's SHA256SUMS.
read_expected_sum() {
  download small "$base/$version/SHA256SUMS" "$workdir/SHA256SUMS"
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

# Downloads the binary of $version unless $dir already holds it, checks its SHA-256 and installs it.
install_verified() {
  if [ -f "$dir/rootless-k8s" ] && [ "$(sha256_of "$dir/rootless-k8s")" = "$expected" ]; then
    say "$dir/rootless-k8s is already this version (same SHA-256)"
  else
    download binary "$base/$version/$binary_name" "$workdir/$binary_name"
    actual=$(sha256_of "$workdir/$binary_name")
    [ "$actual" = "$expected" ] || die "checksum mismatch for $binary_name: got $actual, SHA256SUMS says $expected; nothing was installed" \
      "run this again (a download may have been cut); if it persists, the mirror ($base) serves a tampered or broken file" 4
    say "verified SHA-256 $actual"
    install_binary
    say "installed rootless-k8s $version to $dir/rootless-k8s"
  fi
}

main() {
  opt_version="" opt_yes=0 opt_no_start=0 opt_modify_path=0 opt_insecure_http=0 opt_allow_downgrade=0
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
  read_limits
  pick_verifier
  binary_name=rootless-k8s-linux-$arch
  resolve_install_dir
  workdir=$(mktemp -d)

  resolve_version
  refuse_downgrade
  if [ "$keep_installed" = 0 ]; then
    say "rootless-k8s $version ($version_source) for linux-$arch, from $base"
    read_expected_sum
    verify_signature
    check_signed_version
    install_verified
  fi

  if ! on_path "$dir"; then
    if [ "$opt_modify_path" = 1 ]; then modify_path; else print_path_hint; fi
  fi
  hand_over "$@"
}

main "$@"
}

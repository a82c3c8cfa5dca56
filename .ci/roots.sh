# What .ci/matrix and .ci/arm do alike to their Debian roots; sourced by
# both, which run with set -euo pipefail.

# Installs PACKAGES from Debian's unless every one of COMMANDS is on the
# PATH.
install_missing() { # "COMMANDS" PACKAGES...
  local command
  for command in $1; do
    command -v "$command" >/dev/null && continue
    shift
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@"
    return
  done
}

# The mirror this machine's apt uses for its own Debian suite, or MIRROR.
debian_mirror() {
  [ -z "${MIRROR:-}" ] || { echo "$MIRROR"; return; }
  apt-get indextargets --format '$(ORIGIN) $(SUITE) $(REPO_URI)' |
    awk '$1 == "Debian" && $2 !~ /security/ { print $3; exit }'
}

# Stops the script if anything is mounted under ROOT: rm -rf crosses
# mounts, and would delete the host's files through them.
refuse_mounts_under() { # ROOT
  if grep -qE " $1(/| )" /proc/mounts; then
    echo "${0##*/}: $1 has mounts under it; unmount them first" >&2
    exit 1
  fi
}

# A new root of Debian SUITE at ROOT, whatever was there before, with
# OPTIONS (--arch=arm64) passed on to debootstrap. debootstrap mounts
# /proc and /sys in the root while it runs, so it runs in a mount
# namespace of its own.
bootstrap_root() { # SUITE ROOT [OPTIONS...]
  local suite=$1 root=$2
  shift 2
  refuse_mounts_under "$root"
  rm -rf "$root"
  mkdir -p "$(dirname "$root")"
  # Testing suites have no debootstrap script of their own on older hosts.
  local script=/usr/share/debootstrap/scripts/$suite
  [ -e "$script" ] || script=/usr/share/debootstrap/scripts/sid
  unshare -m --propagation private \
    debootstrap "$@" --variant=minbase "$suite" "$root" "$(debian_mirror)" "$script"
}

# The checkout at TOP as it is now, tracked files and new ones git does
# not ignore, without what was built in it, copied into DEST.
copy_checkout() { # TOP DEST
  (cd "$1" && git ls-files -z --cached --others --exclude-standard |
    tar --null --ignore-failed-read -T - -cf -) | tar -C "$2" -xf -
}

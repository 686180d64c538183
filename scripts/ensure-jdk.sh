#!/usr/bin/env bash
# Makes sure Java 17+ and Maven are on this machine; installs them with apt-get
# (Debian/Ubuntu, as root) when missing, and says clearly what to do otherwise.
set -euo pipefail

MIN_JAVA=17

java_major() {
  local java="$1" version
  version=$("$java" -version 2>&1 | sed -nE 's/.*version "([0-9]+)(\.([0-9]+))?.*/\1.\3/p' | head -n1)
  case "$version" in
    1.*) echo "${version#1.}" ;;   # Java 8 and older say "1.8"
    *) echo "${version%%.*}" ;;
  esac
}

java_bin() {
  if [ -n "${JAVA_HOME:-}" ] && [ -x "$JAVA_HOME/bin/java" ]; then echo "$JAVA_HOME/bin/java"
  else command -v java || true
  fi
}

apt_install() {
  if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
    echo "error: $1 is missing and cannot be installed automatically here." >&2
    echo "       Install it yourself (for example: sudo apt-get install $2) and re-run make." >&2
    exit 1
  fi
  echo ">> $1 is missing: installing $2 with apt-get"
  apt-get update -qq
  # shellcheck disable=SC2086 # the package list is meant to split
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $2 >/dev/null
}

java=$(java_bin)
if [ -z "$java" ] || [ "$(java_major "$java")" -lt "$MIN_JAVA" ]; then
  found=${java:+$java is Java $(java_major "$java")}
  apt_install "Java $MIN_JAVA+${found:+ ($found)}" openjdk-17-jdk-headless
  java=$(java_bin)
  if [ -z "$java" ] || [ "$(java_major "$java")" -lt "$MIN_JAVA" ]; then
    echo "error: still no Java $MIN_JAVA+ on PATH after installing; set JAVA_HOME to a JDK $MIN_JAVA+" >&2
    exit 1
  fi
fi

command -v mvn >/dev/null || apt_install "Maven" maven

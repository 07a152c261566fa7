# Sourced by the device scripts that take a DIR holding the harness: a build travels to the device machine gzip'd
# (the carry limit), so DIR/harness.gz is unpacked in place when DIR/harness is missing.
unpack_harness() {
  if [[ ! -x "$1/harness" && -f "$1/harness.gz" ]]; then gunzip -kf "$1/harness.gz" && chmod +x "$1/harness"; fi
}
# unpack_harness, then a one-line error and status 2 when DIR still holds no runnable harness.
require_harness() {
  unpack_harness "$1"
  [[ -x "$1/harness" ]] || { echo "$(basename "$0" .sh): no harness binary in $1 (harness or harness.gz)" >&2; exit 2; }
}

# Sourced by the device scripts that take a DIR holding the harness: a build travels to the device machine gzip'd
# (the carry limit), so DIR/harness.gz is unpacked in place when DIR/harness is missing.
unpack_harness() {
  if [[ ! -x "$1/harness" && -f "$1/harness.gz" ]]; then gunzip -kf "$1/harness.gz" && chmod +x "$1/harness"; fi
}

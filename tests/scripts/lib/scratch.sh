# Sourced by tests/scripts/test_*.sh: root (the repository) and tmp (a scratch folder, removed at exit).
root=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

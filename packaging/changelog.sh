#!/usr/bin/env bash
# Writes the package changelogs from CHANGELOG.md, so there is one changelog to keep.
#
#   packaging/changelog.sh deb   the Debian changelog (packaging/debian/changelog, kept in git
#                                so that a plain `cargo deb` ships it; a test checks it is fresh)
#   packaging/changelog.sh rpm   the %changelog section of the RPM spec
#
# CHANGELOG.md: a `## VERSION - YYYY-MM-DD` heading per release, then `- ` items whose
# continuation lines are indented by two spaces. The maintainer is Cargo.toml's
# [package.metadata.deb] maintainer; the package revision is 1.
set -euo pipefail
cd "$(dirname "$0")/.."

format=${1:-}
case "$format" in
deb | rpm) ;;
*)
    echo "usage: $0 deb|rpm" >&2
    exit 2
    ;;
esac

maintainer=$(sed -n 's/^maintainer = "\(.*\)"$/\1/p' Cargo.toml)
name=$(sed -n 's/^name = "\(.*\)"$/\1/p' Cargo.toml | head -n 1)
if [ -z "$maintainer" ] || [ -z "$name" ]; then
    echo "$0: Cargo.toml has no package name or [package.metadata.deb] maintainer" >&2
    exit 1
fi

# One line per release: VERSION DATE, in file order (newest first).
releases=$(sed -n 's/^## \([^ ]*\) - \([0-9]\{4\}-[0-9][0-9]-[0-9][0-9]\)$/\1 \2/p' CHANGELOG.md)
if [ -z "$releases" ]; then
    echo "$0: CHANGELOG.md has no '## VERSION - YYYY-MM-DD' heading" >&2
    exit 1
fi

# The items of release $1, as written (the lines between its heading and the next one).
items() {
    awk -v want="## $1 - " '
        index($0, "## ") == 1 { inside = (index($0, want) == 1); next }
        inside && NF { print }
    ' CHANGELOG.md
}

first=1
while read -r version day; do
    case "$format" in
    deb)
        [ "$first" = 1 ] || echo
        echo "$name ($version-1) unstable; urgency=medium"
        echo
        items "$version" | sed -e 's/^- /  * /' -e 's/^  \([^ *]\)/    \1/'
        echo
        echo " -- $maintainer  $(LC_ALL=C TZ=UTC date -R -d "$day 00:00:00")"
        ;;
    rpm)
        [ "$first" = 1 ] || echo
        echo "* $(LC_ALL=C TZ=UTC date -d "$day" '+%a %b %d %Y') $maintainer - $version-1"
        items "$version"
        ;;
    esac
    first=0
done <<<"$releases"

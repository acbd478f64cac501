# go-tools.sh is sourced by the scripts that need a Go tool at a pinned
# version (check-deploy.sh, staticcheck.sh): it installs the tool from the
# Go module proxy into one cache directory ($PAYGRAPH_TOOLS, default
# ~/.cache/paygraph-tools), once, and checks the binary is that version.
# The sourcing script defines say and die.

TOOLS=${PAYGRAPH_TOOLS:-${XDG_CACHE_HOME:-$HOME/.cache}/paygraph-tools}
mkdir -p "$TOOLS/bin"

# The module version a Go binary was built from (go install pkg@version).
built_version() { go version -m "$1" 2>/dev/null | awk '$1 == "mod" { print $3 }'; }

install_go_tool() { # name package version
	local name=$1 pkg=$2 version=$3
	if [[ -x $TOOLS/bin/$name && $(built_version "$TOOLS/bin/$name") == "$version" ]]; then
		return
	fi
	say "installing $name $version (Go module proxy)"
	(cd "$TOOLS" && GOFLAGS= GOBIN="$TOOLS/bin" go install "$pkg@$version") ||
		die "could not install $pkg@$version"
	[[ $(built_version "$TOOLS/bin/$name") == "$version" ]] || die "$TOOLS/bin/$name is not $version"
}

#!/bin/sh
# The man page doc/ftmesh.1 and the --help texts cannot drift: for the
# command itself and for each command, every option its --help prints has
# an entry in the man page (in the command's section, or under MESH AND
# FAULT OPTIONS for the commands that take them), and every entry is an
# option that --help prints. The commands are those `ftmesh --help` lists,
# and the man page has a section for each of them and no other.
set -u
ftmesh=${FTMESH:-./ftmesh}
man=${FTMESH_MAN:-$(dirname "$0")/../doc/ftmesh.1}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0; passes=0
ok() { passes=$((passes + 1)); }
bad() { echo "FAIL: $*"; fails=$((fails + 1)); }

[ -r "$man" ] || { echo "FAIL: no man page at $man"; exit 1; }

# Option tags of the man page as "SECTION OPTION" lines: the line after
# each .TP, in the section it belongs to (a command's .SS, "common" for
# MESH AND FAULT OPTIONS, "top" for OPTIONS).
sed -e 's/\\-/-/g' -e 's/\\f[BIRP]//g' "$man" | awk '
    /^\.SH/ { sec = ""; if ($0 ~ /MESH AND FAULT OPTIONS/) sec = "common";
              else if ($0 ~ /^\.SH "?OPTIONS"?$/) sec = "top"; next }
    /^\.SS "?ftmesh / { s = $0; sub(/^\.SS "?ftmesh /, "", s); sub(/".*/, "", s); sec = s;
                         print sec > "/dev/stderr"; next }
    /^\.TP/ { tag = 1; next }
    tag { tag = 0; if (sec != "" && match($0, /--[A-Za-z][A-Za-z0-9-]*/))
              print sec, substr($0, RSTART, RLENGTH) }
' >"$tmp/man" 2>"$tmp/man-cmds"

opts() { grep -o -- '--[A-Za-z][A-Za-z0-9-]*' | sort -u; }
man_opts() { awk -v s="$1" '$1 == s { print $2 }' "$tmp/man" | sort -u; }

# The commands `ftmesh --help` lists (indented names under "Commands:").
"$ftmesh" --help >"$tmp/help-top" || bad "ftmesh --help failed"
awk '/^Commands:/ { on = 1; next } /^[^ ]/ { on = 0 } on && /^  [a-z]/ { print $1 }' \
    "$tmp/help-top" | sort -u >"$tmp/cmds"
sort -u "$tmp/man-cmds" >"$tmp/man-cmds-sorted"
if cmp -s "$tmp/cmds" "$tmp/man-cmds-sorted"; then ok; else
    bad "commands in ftmesh --help ($(tr '\n' ' ' <"$tmp/cmds")) differ from the man page's sections ($(tr '\n' ' ' <"$tmp/man-cmds-sorted"))"
fi
[ -s "$tmp/cmds" ] && ok || bad "ftmesh --help lists no command"

# compare NAME HELPFILE MANFILE: the same options in both
compare() {
    for o in $(comm -23 "$2" "$3"); do bad "$1: $o is in --help but not in the man page"; done
    for o in $(comm -13 "$2" "$3"); do bad "$1: $o is in the man page but not in --help"; done
    cmp -s "$2" "$3" && ok
}

# The command's own options are those of its "Options:" block; an option
# the command list names (demo's --html) belongs to that command, and its
# --help must print it.
awk '/^Options:/ { on = 1; next } /^[^ ]/ { on = 0 } on' "$tmp/help-top" | opts >"$tmp/h"
man_opts top >"$tmp/m"
compare "ftmesh" "$tmp/h" "$tmp/m"
# (a command's description may go on over indented lines)
awk '/^Commands:/ { on = 1; next } /^[^ ]/ { on = 0 }
     on && /^  [a-z]/ { cmd = $1; print; next }
     on && /^   / && cmd != "" { print cmd, $0 }' "$tmp/help-top" |
while read -r cmd rest; do
    for o in $(printf '%s\n' "$rest" | opts); do
        "$ftmesh" "$cmd" --help | grep -q -- "$o" ||
            { echo "FAIL: ftmesh --help names $o for $cmd, which ftmesh $cmd --help does not print"; echo x >>"$tmp/listfail"; }
    done
done
[ -e "$tmp/listfail" ] && bad "options in the command list of ftmesh --help" || ok

man_opts common >"$tmp/common"
[ -s "$tmp/common" ] && ok || bad "the man page has no MESH AND FAULT OPTIONS entries"
for cmd in $(cat "$tmp/cmds"); do
    "$ftmesh" "$cmd" --help >"$tmp/help-$cmd" || { bad "ftmesh $cmd --help failed"; continue; }
    opts <"$tmp/help-$cmd" >"$tmp/h"
    man_opts "$cmd" >"$tmp/m"
    # a command whose --help has --mesh takes the common options
    if grep -qx -- --mesh "$tmp/h"; then
        for o in $(comm -23 "$tmp/common" "$tmp/h"); do
            bad "$cmd: common option $o is in the man page but not in ftmesh $cmd --help"
        done
        sort -u "$tmp/m" "$tmp/common" >"$tmp/m2"
        mv "$tmp/m2" "$tmp/m"
    fi
    # --help is described once, under OPTIONS, for every command
    if grep -qx -- --help "$tmp/h" && man_opts top | grep -qx -- --help; then
        { cat "$tmp/m"; echo --help; } | sort -u >"$tmp/m2"
        mv "$tmp/m2" "$tmp/m"
    fi
    [ -s "$tmp/m" ] || bad "ftmesh $cmd: no options in its man page section"
    compare "ftmesh $cmd" "$tmp/h" "$tmp/m"
done

echo "$passes passed, $fails failed"
[ "$fails" = 0 ]

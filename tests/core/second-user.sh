#!/bin/bash
# A fabric belongs to its creator. Run as root, this has another local user
# (nobody, through runuser) try to join, destroy and hijack root's fabric,
# and root refuse what that user made first: a fabric of the same name, a
# symlink in its place, a symlink where the emulator makes its backing file.
# Skipped (exit 77) when not root, or without runuser or the user nobody.
# Usage: second-user.sh SMARTIO NVME-EMU NVME-IDENTIFY
set -u
U=nobody
if [ "$(id -u)" -ne 0 ]; then
	echo "SKIP: running commands as another user needs root"
	exit 77
fi
if ! command -v runuser >/dev/null || ! id "$U" >/dev/null 2>&1; then
	echo "SKIP: needs runuser and the user $U"
	exit 77
fi
base=${SMARTIO_RUNDIR:-/dev/shm}
if ! runuser -u "$U" -- test -w "$base" -a -x "$base"; then
	echo "SKIP: $U cannot make fabrics in $base"
	exit 77
fi
export SMARTIO_QUIET=1 SMARTIO_LOCK_TIMEOUT_MS=500
# The tools where the other user can run them.
bin=$(mktemp -d /tmp/second-user.XXXXXX)
chmod 755 "$bin"
cp "$1" "$2" "$3" "$bin/"
chmod 755 "$bin"/*
S=$bin/smartio EMU=$bin/nvme-emu IDENT=$bin/nvme-identify
R=t-root-$$ P=t-other-$$ H=t-link-$$ G=t-group-$$
out=$bin/out
cleanup() {
	for f in $R $P $G; do "$S" destroy "$f" --force >/dev/null 2>&1; done
	rm -f "$base/smartio-$H" /tmp/second-user-back-$$ /tmp/second-user-new-$$
	rm -rf "$bin"
}
trap cleanup EXIT
pass=0 fail=0

# as-user COMMAND...: runs it as $U (a program, so timeout can run it)
as_user=$bin/as-user
cat >"$as_user" <<EOF
#!/bin/sh
exec runuser -u $U -- env SMARTIO_QUIET=1 SMARTIO_LOCK_TIMEOUT_MS=500 \
	${SMARTIO_RUNDIR:+SMARTIO_RUNDIR=$SMARTIO_RUNDIR} "\$@"
EOF
chmod 755 "$as_user"

. "$(dirname "$0")/refuses.sh"

check() {	# description, then a command that must succeed
	local d=$1
	shift
	if timeout 20 "$@" >"$out" 2>&1; then pass=$((pass + 1)); else bad "$d"; fi
}

# Root's fabric: the other user can neither use nor remove it.
"$S" create "$R" --nodes 2 >/dev/null || { echo "FAIL: cannot create $R"; exit 1; }
refuses "$U: status of root's fabric" "belongs to uid 0" "$as_user" "$S" status "$R"
refuses "$U: path in root's fabric" "belongs to uid 0" "$as_user" "$S" path "$R" node:0 node:1
refuses "$U: link of root's fabric" "belongs to uid 0" "$as_user" "$S" link "$R" 1 down
refuses "$U: nvme-emu on root's fabric" "belongs to uid 0" "$as_user" "$EMU" --fabric "$R" --backing ram:4M
refuses "$U: nvme-identify on root's fabric" "belongs to uid 0" "$as_user" "$IDENT" --fabric "$R"
refuses "$U: destroy root's fabric" "only its owner can destroy it" "$as_user" "$S" destroy "$R"
check "root's fabric is still there" "$S" status "$R"
refuses "$U: write root's registry (its lock word)" "Permission denied" \
	"$as_user" sh -c "printf x >> '$base/smartio-$R/registry'"

# A fabric the other user made first: root refuses to create, join or use it.
check "$U creates a fabric" "$as_user" "$S" create "$P" --nodes 2
refuses "root: create over it" "already exists" "$S" create "$P"
refuses "root: status" "belongs to uid 65534" "$S" status "$P"
refuses "root: link" "belongs to uid 65534" "$S" link "$P" 1 down
refuses "root: nvme-emu joins it" "belongs to uid 65534" "$EMU" --fabric "$P" --backing ram:4M
refuses "root: nvme-identify" "belongs to uid 65534" "$IDENT" --fabric "$P"
# (the lock word follows magic, version and size: byte 16)
check "$U forges the lock word of its own fabric" "$as_user" sh -c \
	"printf '\\001\\000\\000\\000' | dd of='$base/smartio-$P/registry' bs=1 seek=16 conv=notrunc status=none"
refuses "root: status, lock forged" "belongs to uid 65534" "$S" status "$P"
check "$U destroys its own fabric, lock forged or not" "$as_user" "$S" destroy "$P"

# A symlink in place of a fabric, pointing at root's: not followed.
check "$U plants a symlink" "$as_user" ln -s "$base/smartio-$R" "$base/smartio-$H"
refuses "root: status through the symlink" "symbolic link" "$S" status "$H"
refuses "root: nvme-emu through the symlink" "symbolic link" "$EMU" --fabric "$H" --backing ram:4M
refuses "root: destroy through the symlink" "symbolic link" "$S" destroy "$H"
check "root's fabric behind the symlink is intact" "$S" status "$R"

# The emulator's backing file: a planted symlink is not followed, a new file is private.
echo secret > "$bin/root-only"
chmod 600 "$bin/root-only"
check "$U plants a symlink for a backing file" "$as_user" ln -s "$bin/root-only" /tmp/second-user-back-$$
refuses "root: nvme-emu --backing through a symlink" "symbolic links" \
	"$EMU" --fabric "$R" --backing /tmp/second-user-back-$$ --ns 8M
check "the symlink's target kept its size" test "$(stat -c %s "$bin/root-only")" -eq 7
timeout -s INT 3 "$EMU" --fabric "$R" --backing /tmp/second-user-new-$$ --ns 1M >"$out" 2>&1
check "a new backing file is mode 0600" test "$(stat -c %a /tmp/second-user-new-$$)" = 600

# A group fabric: members of its group join; only its owner removes it.
check "root creates a fabric for group nogroup" "$S" create "$G" --group "$(id -gn "$U")"
check "$U, in that group, joins it" "$as_user" "$S" status "$G"
refuses "$U: destroy the group's fabric" "only its owner can destroy it" "$as_user" "$S" destroy "$G"
check "root destroys it" "$S" destroy "$G"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]

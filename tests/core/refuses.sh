# Sourced by the tests that run programs on bad input (registry-cli.sh,
# second-user.sh, hostile-input.sh). The caller sets $out (a scratch file)
# and pass=0 fail=0, and prints "$pass passed, $fail failed" at the end.

# bad DESCRIPTION: count a failure and show what the program printed.
bad() {
	echo "FAIL: $1"
	sed 's/^/    /' "$out"
	fail=$((fail + 1))
}

# refuses DESCRIPTION EXPECTED COMMAND...: the command must exit 1 or 2 (not
# 0, not hang, not die of a signal), print EXPECTED (a fixed string), and
# not bring an emulator up.
refuses() {
	local d=$1 want=$2 rc
	shift 2
	timeout 20 "$@" >"$out" 2>&1
	rc=$?
	if [ $rc -eq 0 ] || [ $rc -gt 2 ]; then
		bad "$d: exit status $rc (0: accepted; 124: hung; over 128: killed by a signal)"
	elif ! grep -qF -- "$want" "$out"; then
		bad "$d: the message does not say '$want'"
	elif grep -q "ready on node" "$out"; then
		bad "$d: the emulator came up on it"
	else
		pass=$((pass + 1))
	fi
}

#!/bin/sh
# deploy_yaml.sh - the Kubernetes manifests in docs/deploy/ cannot be applied
# here, so they are parsed (Debian's python3-yaml) and their structure is
# checked by test/lib/check_deploy_yaml.py; broken copies prove that the
# check rejects what it must.
. "$FL_TEST_TOP/test/lib/fltest.sh"

CHECK=$FL_TEST_TOP/test/lib/check_deploy_yaml.py
D=$FL_TEST_TOP/docs/deploy
DS=$D/fastlocal-daemonset.yaml
WL=$D/workload-snippet.yaml

manifests_parse_and_are_complete() {
	[ -f "$DS" ] && [ -f "$WL" ] || t_fail "docs/deploy lacks its two manifests" || return 1
	/usr/bin/python3 -c 'import yaml' 2>/dev/null || t_fail "python3-yaml is missing (make deps)" || return 1
	t_expect_rc 0 /usr/bin/python3 "$CHECK" "$D"/*.yaml || return 1
	[ ! -s "$T_TMP/err" ] || t_fail "$(head -c 400 "$T_TMP/err")"
}

# rejects WHAT FILE SED_SCRIPT: a copy of FILE edited by SED_SCRIPT (it must
# change it) makes the check fail and name WHAT.
rejects() {
	b=$T_TMP/$(basename "$2")
	sed "$3" "$2" >"$b"
	! cmp -s "$2" "$b" || t_fail "the edit for '$1' changed nothing" || return 1
	t_expect_rc 1 /usr/bin/python3 "$CHECK" "$b" "$([ "$2" = "$DS" ] && echo "$WL" || echo "$DS")" || return 1
	grep -qF -- "$1" "$T_TMP/err" || t_fail "broken copy: expected '$1', got: $(head -c 300 "$T_TMP/err")" || return 1
	echo "  rejected: $(head -n 1 "$T_TMP/err")"
}

broken_manifests_are_rejected() {
	rejects "mapping values are not allowed" "$WL" 's/^  name: my-app$/  name: my-app: broken/' || return 1
	rejects "while parsing a flow sequence" "$DS" 's/\["\/usr\/local\/bin\/fastlocal", "load"\]/["\/usr\/local\/bin\/fastlocal", "load"/' || return 1
	rejects "has no kind" "$DS" 's/^kind: Namespace$//' || return 1
	rejects 'no container runs `fastlocal load`' "$DS" 's/"load"\]/"version"]/' || return 1
	rejects 'runs `fastlocal daemon`' "$DS" 's/- daemon$/- status/' || return 1
	rejects "no hostPath volume for /run/fastlocal" "$DS" 's|path: /run/fastlocal|path: /run/elsewhere|' || return 1
	rejects "Bidirectional" "$DS" 's/mountPropagation: Bidirectional/mountPropagation: HostToContainer/' || return 1
	rejects "no container sets LD_PRELOAD" "$WL" 's/name: LD_PRELOAD/name: LD_LIBRARY_PATH/' || return 1
	rejects "asks for privileges or capabilities" "$WL" 's/drop: \["ALL"\]/add: ["NET_ADMIN"]/' || return 1
	rejects "runAsNonRoot" "$WL" 's/runAsNonRoot: true/runAsNonRoot: false/' || return 1
	rejects "mounts undefined volume" "$WL" 's/^        - name: fastlocal-lib$/        - name: other-lib/'
}

t_run "the manifests in docs/deploy parse and have the required structure" manifests_parse_and_are_complete
t_run "the manifest check rejects broken copies" broken_manifests_are_rejected
t_done

#!/usr/bin/python3
"""check_deploy_yaml.py FILE... - checks the Kubernetes manifests in
docs/deploy/ (they cannot be applied here): every file parses as YAML, every
document has apiVersion/kind/metadata.name, the fastlocal DaemonSet loads and
runs the broker with the host mounts it needs, and a workload opts in with
LD_PRELOAD and no privileges. Prints one line per problem on stderr,
"FILE: why", and exits 1 if there was any."""
import sys

import yaml

problems = []


def bad(where, why):
    problems.append(f"{where}: {why}")


def pod_spec(doc):
    """The pod spec of a Pod or of a workload's pod template, else None."""
    if doc.get("kind") == "Pod":
        return doc.get("spec")
    return ((doc.get("spec") or {}).get("template") or {}).get("spec")


def containers(spec):
    return list(spec.get("initContainers") or []) + list(spec.get("containers") or [])


def argv(c):
    return [str(a) for a in (c.get("command") or []) + (c.get("args") or [])]


def runs(c, sub):
    """c runs "fastlocal SUB" (directly, not through a shell)."""
    a = argv(c)
    return len(a) >= 2 and a[0].rsplit("/", 1)[-1] == "fastlocal" and a[1] == sub


def check_mounts(where, spec):
    """Every mount names a volume; every volume is mounted somewhere."""
    vols = {v.get("name"): v for v in spec.get("volumes") or []}
    mounted = set()
    for c in containers(spec):
        for m in c.get("volumeMounts") or []:
            if m.get("name") not in vols:
                bad(where, f"container {c.get('name')} mounts undefined volume {m.get('name')}")
            mounted.add(m.get("name"))
    for n in vols:
        if n not in mounted:
            bad(where, f"volume {n} is mounted by no container")
    return vols


def host_mount(where, spec, path):
    """The volume mount of hostPath PATH, or None after reporting it."""
    vols = {v.get("name"): v for v in spec.get("volumes") or []}
    names = [n for n, v in vols.items() if (v.get("hostPath") or {}).get("path") == path]
    if not names:
        bad(where, f"no hostPath volume for {path}")
        return []
    found = [m for c in containers(spec) for m in c.get("volumeMounts") or []
             if m.get("name") in names]
    if not found:
        bad(where, f"the hostPath volume for {path} is not mounted")
    return found


def check_daemonset(where, doc):
    spec = pod_spec(doc) or {}
    cs = containers(spec)
    if not any(runs(c, "load") for c in cs):
        bad(where, "no container runs `fastlocal load`")
    broker = [c for c in spec.get("containers") or [] if runs(c, "daemon")]
    if not broker:
        bad(where, "no (non-init) container runs `fastlocal daemon` in the foreground")
    for c in broker:
        a = argv(c)
        if "--socket" not in a or a[a.index("--socket") + 1:][:1] != ["/run/fastlocal/broker.sock"]:
            bad(where, "fastlocal daemon is not given --socket /run/fastlocal/broker.sock")
    for c in cs:
        if "unload" in argv(c) or "unload" in str(c.get("lifecycle") or ""):
            bad(where, f"container {c.get('name')} unloads fastlocal (unload drops running pods)")
        if not (c.get("securityContext") or {}).get("privileged"):
            bad(where, f"container {c.get('name')} is not privileged (Bidirectional needs it)")
    check_mounts(where, spec)
    for m in host_mount(where, spec, "/sys/fs/bpf"):
        if m.get("mountPropagation") != "Bidirectional" or m.get("mountPath") != "/sys/fs/bpf":
            bad(where, "/sys/fs/bpf must be mounted at /sys/fs/bpf with Bidirectional propagation")
    for m in host_mount(where, spec, "/sys/fs/cgroup"):
        if m.get("mountPath") != "/sys/fs/cgroup":
            bad(where, "the host cgroup2 root must be mounted over /sys/fs/cgroup")
    host_mount(where, spec, "/run/fastlocal")


def check_workload(where, spec):
    check_mounts(where, spec)
    if not (spec.get("securityContext") or {}).get("runAsNonRoot"):
        bad(where, "the pod does not set runAsNonRoot: true")
    if not host_mount(where, spec, "/run/fastlocal"):
        return
    apps = spec.get("containers") or []
    if not any(e.get("name") == "LD_PRELOAD" and "libfastlocal.so" in str(e.get("value"))
               for c in apps for e in c.get("env") or []):
        bad(where, "no container sets LD_PRELOAD to libfastlocal.so")
    for c in containers(spec):
        sc = c.get("securityContext") or {}
        if sc.get("privileged") or (sc.get("capabilities") or {}).get("add"):
            bad(where, f"container {c.get('name')} asks for privileges or capabilities")


def main(files):
    saw_ds = saw_workload = False
    for f in files:
        try:
            with open(f, encoding="utf-8") as fh:
                docs = [d for d in yaml.safe_load_all(fh) if d is not None]
        except (OSError, yaml.YAMLError) as e:
            bad(f, " ".join(str(e).split()))
            continue
        if not docs:
            bad(f, "no YAML document")
        for i, d in enumerate(docs):
            where = f"{f} document {i + 1}"
            if not isinstance(d, dict):
                bad(where, "is not a mapping")
                continue
            for k in ("apiVersion", "kind"):
                if not isinstance(d.get(k), str) or not d.get(k):
                    bad(where, f"has no {k}")
            if not (d.get("metadata") or {}).get("name"):
                bad(where, "has no metadata.name")
            if d.get("kind") == "DaemonSet":
                saw_ds = True
                check_daemonset(where, d)
            elif pod_spec(d) is not None:
                saw_workload = True
                check_workload(where, pod_spec(d))
    if not saw_ds:
        bad("docs/deploy", "no DaemonSet")
    if not saw_workload:
        bad("docs/deploy", "no workload (Pod or pod template)")
    for p in problems:
        print(p, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

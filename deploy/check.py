"""Checks deploy/kubernetes offline, as `make test` runs it:

1. renders the kustomization (its resources, its namespace and image tag: the parts
   of kustomize these manifests use) and validates every object, and every object
   of secrets.example.yaml, against the Kubernetes schemas of 1.30 to 1.37
   (kubernetes-validate ships them; nothing is fetched), strictly: an unknown or
   misplaced field fails;
2. checks the security settings the deployment promises (docs/scaling.md), so that
   they cannot rot: restricted Pod Security, non-root, read-only root file system,
   no privilege escalation, every capability dropped, the runtime's seccomp profile,
   no service account token, memory limits, /tmp and /dev/shm on emptyDir, default-deny
   network policies, workers reachable only from the control plane and unable to
   reach private, link-local (metadata) and shared ranges, disruption budgets and
   autoscalers for both roles, and every Secret key referenced present;
3. proves each check can fail: it breaks a copy of the manifests one setting at a
   time and expects that check to catch it.

Prints one line per check; exits non-zero on any failure.
"""

import copy
import pathlib
import sys

import kubernetes_validate
import yaml

HERE = pathlib.Path(__file__).resolve().parent / "kubernetes"
VERSIONS = ["1.30.0", "1.31.0", "1.32.0", "1.33.0", "1.34.0", "1.35.0", "1.36.0", "1.37.0"]
PRIVATE_RANGES = [
    "10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "169.254.0.0/16",
    "100.64.0.0/10", "127.0.0.0/8",
]


def load(name):
    with open(HERE / name) as f:
        return [d for d in yaml.safe_load_all(f) if d]


def render():
    """The kustomization's objects as `kubectl apply -k` would send them."""
    kustomization = load("kustomization.yaml")[0]
    objects = []
    for resource in kustomization["resources"]:
        for obj in load(resource):
            obj = copy.deepcopy(obj)
            if obj["kind"] != "Namespace" and "namespace" in kustomization:
                obj["metadata"]["namespace"] = kustomization["namespace"]
            for image in kustomization.get("images", []):
                for pod in pod_specs([obj]):
                    for c in pod[1].get("containers", []):
                        if c["image"].split(":")[0] == image["name"]:
                            c["image"] = f"{image['name']}:{image['newTag']}"
            objects.append(obj)
    return objects


def pod_specs(objects):
    for obj in objects:
        spec = obj.get("spec", {}).get("template", {}).get("spec")
        if spec is not None:
            yield obj, spec


def named(objects, kind, name):
    for obj in objects:
        if obj["kind"] == kind and obj["metadata"]["name"] == name:
            return obj
    raise AssertionError(f"no {kind} {name}")


def component(obj):
    return obj["spec"]["template"]["metadata"]["labels"].get("app.kubernetes.io/component")


# -- the checks: each takes the rendered objects (and the example Secrets) and
# raises AssertionError saying what is wrong.

def check_files_are_all_rendered(objects, secrets):
    listed = set(load("kustomization.yaml")[0]["resources"])
    files = {p.name for p in HERE.glob("*.yaml")} - {"kustomization.yaml", "secrets.example.yaml"}
    assert listed == files, f"kustomization resources {sorted(listed)} != files {sorted(files)}"


def check_namespace_is_restricted(objects, secrets):
    ns = [o for o in objects if o["kind"] == "Namespace"]
    assert len(ns) == 1, "one Namespace"
    labels = ns[0]["metadata"].get("labels", {})
    assert labels.get("pod-security.kubernetes.io/enforce") == "restricted", labels
    for obj in objects:
        if obj["kind"] != "Namespace":
            assert obj["metadata"].get("namespace") == ns[0]["metadata"]["name"], obj["metadata"]


def check_pods_run_restricted(objects, secrets):
    pods = list(pod_specs(objects))
    assert {component(o) for o, _ in pods} == {"control-plane", "worker"}, "both roles"
    for obj, pod in pods:
        where = f"{obj['kind']} {obj['metadata']['name']}"
        assert pod.get("automountServiceAccountToken") is False, f"{where}: service account token mounted"
        for host in ("hostNetwork", "hostPID", "hostIPC"):
            assert not pod.get(host), f"{where}: {host}"
        assert all("hostPath" not in v for v in pod.get("volumes", [])), f"{where}: hostPath volume"
        psc = pod.get("securityContext", {})
        assert psc.get("runAsNonRoot") is True, f"{where}: runAsNonRoot"
        assert psc.get("runAsUser", 0) != 0, f"{where}: runs as uid 0"
        for c in pod["containers"] + pod.get("initContainers", []):
            csc = c.get("securityContext", {})
            at = f"{where} container {c['name']}"
            assert csc.get("allowPrivilegeEscalation") is False, f"{at}: allowPrivilegeEscalation"
            assert csc.get("readOnlyRootFilesystem") is True, f"{at}: readOnlyRootFilesystem"
            assert not csc.get("privileged"), f"{at}: privileged"
            assert "ALL" in csc.get("capabilities", {}).get("drop", []), f"{at}: capabilities not all dropped"
            assert not csc.get("capabilities", {}).get("add"), f"{at}: capabilities added"
            seccomp = csc.get("seccompProfile", psc.get("seccompProfile", {})).get("type")
            assert seccomp in ("RuntimeDefault", "Localhost"), f"{at}: seccomp {seccomp}"
            assert c.get("resources", {}).get("limits", {}).get("memory"), f"{at}: no memory limit"
            mounts = {m["mountPath"]: m["name"] for m in c.get("volumeMounts", [])}
            assert "/tmp" in mounts, f"{at}: /tmp is not a volume (the root file system is read-only)"


def check_worker_scratch_is_on_empty_dirs(objects, secrets):
    worker = next(spec for o, spec in pod_specs(objects) if component(o) == "worker")
    volumes = {v["name"]: v for v in worker["volumes"]}
    mounts = {m["mountPath"]: m["name"] for m in worker["containers"][0]["volumeMounts"]}
    tmp = volumes[mounts["/tmp"]]
    assert "emptyDir" in tmp and tmp["emptyDir"].get("sizeLimit"), f"/tmp: {tmp}"
    assert "/dev/shm" in mounts, "/dev/shm is not sized"
    shm = volumes[mounts["/dev/shm"]]
    assert shm.get("emptyDir", {}).get("medium") == "Memory" and shm["emptyDir"].get("sizeLimit"), f"/dev/shm: {shm}"


def check_network_is_denied_by_default(objects, secrets):
    policies = [o for o in objects if o["kind"] == "NetworkPolicy"]
    deny = [p for p in policies if p["spec"]["podSelector"] == {}
            and set(p["spec"]["policyTypes"]) == {"Ingress", "Egress"}
            and not p["spec"].get("ingress") and not p["spec"].get("egress")]
    assert deny, "no default-deny NetworkPolicy for ingress and egress"
    covered = {p["spec"]["podSelector"].get("matchLabels", {}).get("app.kubernetes.io/component")
               for p in policies}
    assert {"control-plane", "worker"} <= covered, f"policies cover {covered}"


def check_workers_are_reached_only_by_the_control_plane(objects, secrets):
    worker = named(objects, "NetworkPolicy", "worker")["spec"]
    for rule in worker["ingress"]:
        for peer in rule["from"]:
            assert set(peer) == {"podSelector"}, f"worker ingress from {peer}"
            assert peer["podSelector"]["matchLabels"].get("app.kubernetes.io/component") == "control-plane", peer


def check_workers_cannot_reach_the_cluster_or_metadata(objects, secrets):
    worker = named(objects, "NetworkPolicy", "worker")["spec"]
    for rule in worker["egress"]:
        for peer in rule["to"]:
            block = peer.get("ipBlock")
            if block is None:
                # By selector only DNS, and the control plane's port (to register).
                ports = {p["port"] for p in rule.get("ports", [])}
                labels = peer.get("podSelector", {}).get("matchLabels", {})
                to_control = set(peer) == {"podSelector"} and labels.get(
                    "app.kubernetes.io/component") == "control-plane"
                assert ports == {53} or (to_control and ports == {8080}), \
                    f"worker egress by selector beyond DNS and the control plane's port: {rule}"
                continue
            if block["cidr"] == "0.0.0.0/0":
                missing = [r for r in PRIVATE_RANGES if r not in block.get("except", [])]
                assert not missing, f"worker egress to 0.0.0.0/0 keeps {missing}"
            elif block["cidr"] == "::/0":
                assert "fc00::/7" in block.get("except", []) and "fe80::/10" in block.get("except", []), block
            else:
                raise AssertionError(f"worker egress to {block['cidr']}")


def check_the_control_plane_takes_only_its_port(objects, secrets):
    cp = named(objects, "NetworkPolicy", "control-plane")["spec"]
    for rule in cp["ingress"]:
        assert [p["port"] for p in rule["ports"]] == [8080], rule


def check_disruption_budgets_and_autoscalers(objects, secrets):
    for kind in ("PodDisruptionBudget", "HorizontalPodAutoscaler"):
        targets = set()
        for o in objects:
            if o["kind"] != kind:
                continue
            if kind == "PodDisruptionBudget":
                targets.add(o["spec"]["selector"]["matchLabels"]["app.kubernetes.io/component"])
            else:
                targets.add(o["spec"]["scaleTargetRef"]["name"])
        want = {"control-plane", "worker"} if kind == "PodDisruptionBudget" else {"airlock", "airlock-worker"}
        assert targets == want, f"{kind} for {targets}"
    hpa = named(objects, "HorizontalPodAutoscaler", "airlock-worker")["spec"]
    config = named(objects, "ConfigMap", "airlock-config")["data"]["airlock.toml"]
    if "[registration]" in config:
        # Every worker the autoscaler adds must register, and say where it is.
        args = " ".join(worker_pod(objects)["containers"][0]["args"])
        assert "--register=" in args and "--advertise=" in args, f"workers do not register: {args}"
    else:
        listed = config.count("[[workers]]")
        assert hpa["maxReplicas"] <= listed, f"the worker autoscaler may run {hpa['maxReplicas']} pods; the config lists {listed}"


def check_secrets_referenced_exist(objects, secrets):
    keys = {}
    for s in secrets:
        keys[s["metadata"]["name"]] = set(s.get("stringData", {})) | set(s.get("data", {}))
    for obj, pod in pod_specs(objects):
        for c in pod["containers"]:
            for env in c.get("env", []):
                ref = env.get("valueFrom", {}).get("secretKeyRef")
                if ref:
                    assert ref["key"] in keys.get(ref["name"], set()), f"{c['name']}: {ref}"
            # A secret value is never written into a manifest.
            for env in c.get("env", []):
                if env["name"] in ("AIRLOCK_DATABASE_URL", "AIRLOCK_DATABASE_OWNER_URL", "AIRLOCK_MASTER_KEY", "AIRLOCK_WORKER_TOKEN", "AIRLOCK_ADMIN_KEY"):
                    assert "value" not in env, f"{env['name']} is written in the manifest"
        for v in pod.get("volumes", []):
            if "secret" in v:
                assert v["secret"]["secretName"] in keys, v


def check_the_audit_key_is_shared_and_private(objects, secrets):
    config = named(objects, "ConfigMap", "airlock-config")["data"]["airlock.toml"]
    assert "key_file = " in config, "replicas do not share a checkpoint key ([audit] key_file)"
    volume = next((v for v in control_pod(objects)["volumes"] if v.get("secret", {}).get(
        "secretName") == "airlock-audit-key"), None)
    assert volume is not None, "the audit key Secret is not mounted"
    # Airlock refuses a key other users can read; the group is the pod's own.
    assert volume["secret"].get("defaultMode", 0o644) & 0o007 == 0, volume


def check_the_worker_token_is_a_file(objects, secrets):
    # An environment variable is inherited by every child (Chromium's browser
    # process): the token is a mounted file, readable by the pod's user only.
    for obj, pod in pod_specs(objects):
        for c in pod["containers"]:
            names = [env["name"] for env in c.get("env", [])]
            assert "AIRLOCK_WORKER_TOKEN" not in names, f"{c['name']}: the worker token is an environment variable"
    for pod in (control_pod(objects), worker_pod(objects)):
        volume = next((v for v in pod.get("volumes", []) if any(
            i.get("key") == "worker-token" for i in v.get("secret", {}).get("items", []))), None)
        assert volume is not None, "the worker token is not mounted"
        assert volume["secret"].get("defaultMode", 0o644) & 0o077 == 0, volume
    args = " ".join(worker_pod(objects)["containers"][0]["args"])
    assert "--token-file=" in args, f"the worker does not read its token from a file: {args}"
    config = named(objects, "ConfigMap", "airlock-config")["data"]["airlock.toml"]
    assert "token_file = " in config, "the control plane does not read the worker token from a file"


CHECKS = [
    check_files_are_all_rendered,
    check_namespace_is_restricted,
    check_pods_run_restricted,
    check_worker_scratch_is_on_empty_dirs,
    check_network_is_denied_by_default,
    check_workers_are_reached_only_by_the_control_plane,
    check_workers_cannot_reach_the_cluster_or_metadata,
    check_the_control_plane_takes_only_its_port,
    check_disruption_budgets_and_autoscalers,
    check_secrets_referenced_exist,
    check_the_audit_key_is_shared_and_private,
    check_the_worker_token_is_a_file,
]


# -- breakages: (description, the check that must catch it, what to change).

def worker_pod(objects):
    return next(spec for o, spec in pod_specs(objects) if component(o) == "worker")


def control_pod(objects):
    return next(spec for o, spec in pod_specs(objects) if component(o) == "control-plane")


def breakages():
    def set_in(path_fn, key, value):
        def apply(objects, secrets):
            path_fn(objects)[key] = value
        return apply

    def drop_range(objects, secrets):
        spec = named(objects, "NetworkPolicy", "worker")["spec"]
        spec["egress"][0]["to"][0]["ipBlock"]["except"].remove("169.254.0.0/16")

    def open_worker_ingress(objects, secrets):
        spec = named(objects, "NetworkPolicy", "worker")["spec"]
        spec["ingress"][0]["from"].append({"namespaceSelector": {}})

    def no_default_deny(objects, secrets):
        objects[:] = [o for o in objects if not (o["kind"] == "NetworkPolicy" and o["metadata"]["name"] == "default-deny")]

    def shm_on_disk(objects, secrets):
        for v in worker_pod(objects)["volumes"]:
            if v["name"] == "shm":
                v["emptyDir"].pop("medium")

    def unknown_secret_key(objects, secrets):
        control_pod(objects)["containers"][0]["env"].append(
            {"name": "X", "valueFrom": {"secretKeyRef": {"name": "airlock-secrets", "key": "nope"}}})

    def workers_do_not_register(objects, secrets):
        args = worker_pod(objects)["containers"][0]["args"]
        args[:] = [a for a in args if not a.startswith("--register=")]

    def worker_reaches_control_plane_database_port(objects, secrets):
        spec = named(objects, "NetworkPolicy", "worker")["spec"]
        rule = next(r for r in spec["egress"] if any(
            p.get("podSelector", {}).get("matchLabels", {}).get("app.kubernetes.io/component") == "control-plane"
            for p in r["to"]))
        rule["ports"].append({"protocol": "TCP", "port": 5432})

    def not_restricted(objects, secrets):
        next(o for o in objects if o["kind"] == "Namespace")["metadata"]["labels"][
            "pod-security.kubernetes.io/enforce"] = "baseline"

    def audit_key_world_readable(objects, secrets):
        for v in control_pod(objects)["volumes"]:
            if v.get("secret", {}).get("secretName") == "airlock-audit-key":
                v["secret"]["defaultMode"] = 0o444

    def worker_token_in_env(objects, secrets):
        worker_pod(objects)["containers"][0].setdefault("env", []).append(
            {"name": "AIRLOCK_WORKER_TOKEN", "valueFrom": {"secretKeyRef": {"name": "airlock-secrets", "key": "worker-token"}}})

    def worker_token_group_readable(objects, secrets):
        for v in worker_pod(objects)["volumes"]:
            if any(i.get("key") == "worker-token" for i in v.get("secret", {}).get("items", [])):
                v["secret"]["defaultMode"] = 0o440

    def caps_kept(objects, secrets):
        worker_pod(objects)["containers"][0]["securityContext"]["capabilities"]["drop"] = []

    return [
        ("writable root fs", check_pods_run_restricted,
         set_in(lambda o: worker_pod(o)["containers"][0]["securityContext"], "readOnlyRootFilesystem", False)),
        ("privilege escalation", check_pods_run_restricted,
         set_in(lambda o: control_pod(o)["containers"][0]["securityContext"], "allowPrivilegeEscalation", True)),
        ("capabilities kept", check_pods_run_restricted, caps_kept),
        ("token mounted", check_pods_run_restricted,
         set_in(worker_pod, "automountServiceAccountToken", True)),
        ("host network", check_pods_run_restricted, set_in(worker_pod, "hostNetwork", True)),
        ("namespace baseline", check_namespace_is_restricted, not_restricted),
        ("metadata reachable", check_workers_cannot_reach_the_cluster_or_metadata, drop_range),
        ("worker open to the namespace", check_workers_are_reached_only_by_the_control_plane, open_worker_ingress),
        ("no default deny", check_network_is_denied_by_default, no_default_deny),
        ("/dev/shm on disk", check_worker_scratch_is_on_empty_dirs, shm_on_disk),
        ("unknown secret key", check_secrets_referenced_exist, unknown_secret_key),
        ("workers that neither register nor are listed", check_disruption_budgets_and_autoscalers,
         workers_do_not_register),
        ("audit key readable by every user", check_the_audit_key_is_shared_and_private,
         audit_key_world_readable),
        ("worker egress to another control-plane port", check_workers_cannot_reach_the_cluster_or_metadata,
         worker_reaches_control_plane_database_port),
        ("worker token in the environment", check_the_worker_token_is_a_file, worker_token_in_env),
        ("worker token readable by the group", check_the_worker_token_is_a_file, worker_token_group_readable),
    ]


def main():
    failed = 0
    objects = render()
    secrets = load("secrets.example.yaml")
    for version in VERSIONS:
        for obj in objects + secrets:
            try:
                kubernetes_validate.validate(obj, version, strict=True)
            except Exception as e:  # noqa: BLE001 - every kind of invalidity is a failure
                failed += 1
                print(f"FAIL {obj['kind']} {obj['metadata']['name']} against {version}: {str(e)[:500]}")
    print(f"ok   {len(objects)} rendered objects and {len(secrets)} example Secrets valid against Kubernetes {VERSIONS[0]}..{VERSIONS[-1]} (strict)"
          if not failed else f"FAIL schema validation ({failed})")
    # Strict validation catches a misspelled field (which Kubernetes would drop,
    # silently losing the setting).
    typo = copy.deepcopy(next(o for o in objects if o["kind"] == "StatefulSet"))
    context = typo["spec"]["template"]["spec"]["containers"][0]["securityContext"]
    context["readOnlyRootFileSystem"] = context.pop("readOnlyRootFilesystem")
    try:
        kubernetes_validate.validate(typo, VERSIONS[-1], strict=True)
        failed += 1
        print("FAIL strict validation does not catch a misspelled field")
    except Exception:  # noqa: BLE001
        print("ok   strict validation catches: a misspelled field")
    for check in CHECKS:
        try:
            check(objects, secrets)
            print(f"ok   {check.__name__}")
        except AssertionError as e:
            failed += 1
            print(f"FAIL {check.__name__}: {e}")
    for what, check, breaking in breakages():
        broken, broken_secrets = copy.deepcopy(objects), copy.deepcopy(secrets)
        breaking(broken, broken_secrets)
        try:
            check(broken, broken_secrets)
        except AssertionError:
            print(f"ok   {check.__name__} catches: {what}")
            continue
        failed += 1
        print(f"FAIL {check.__name__} does not catch: {what}")
    print(f"{'FAILED' if failed else 'passed'}: {failed} failure(s)")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()

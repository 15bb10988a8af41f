"""The Kubernetes Python client against one API server: the same calls
against kube-apiserver and serve print the same lines.

    python3 python_client.py KUBECONFIG NAMESPACE DISCOVERY_CACHE_FILE

Every step prints one line: what the call returned, reduced to what a
program reads (names, data, codes, reasons, messages, causes, headers),
or the ApiException it raised with the Status and headers the server
sent, or the error the client raised itself. UIDs are replaced by UID,
numbers of four digits or more (resourceVersions) by N; dicts are printed
in the order the client decoded their keys. Nothing printed depends on
time.
"""

import concurrent.futures
import json
import os
import re
import sys
import time

import kubernetes
from kubernetes import client, config, dynamic, watch
from kubernetes.client.rest import ApiException
from kubernetes.dynamic.exceptions import NotFoundError, ResourceNotFoundError

kubeconfig, ns, cache_file = sys.argv[1], sys.argv[2], sys.argv[3]
api = config.new_client_from_config(config_file=kubeconfig)
core = client.CoreV1Api(api)
ext = client.ApiextensionsV1Api(api)
custom = client.CustomObjectsApi(api)

GROUP, PLURAL = "pyclient.example.com", "widgets"


def norm(s):
    s = re.sub(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", "UID", str(s))
    # The oldest revision a server still has differs by nature.
    s = re.sub(r"(too old resource version: \d+) \(\d+\)", r"\1 (N)", s)
    return re.sub(r"\d{4,}", "N", s)


def hdrs(h):
    """What a program reads of a response's headers: its Content-Type,
    whether it has an Audit-Id, its Warning."""
    h = h or {}
    return (h.get("Content-Type"), bool(h.get("Audit-Id")), norm(h.get("Warning")))


def last():
    """The headers of the client's last answer."""
    return hdrs(api.last_response.getheaders())


def outcome(fn, headers=True):
    """What fn returned, or the exception it raised, as step prints it."""
    try:
        out = fn()
    except ApiException as e:
        try:
            st = json.loads(e.body) if e.body else {}
        except ValueError:
            st = {"body": e.body}
        causes = [
            (c.get("reason"), c.get("field"), norm(c.get("message")))
            for c in (st.get("details") or {}).get("causes") or []
        ]
        out = "ApiException %s %s | %s %s %s | %s | %s | %s | %s" % (
            e.status, norm(e.reason), st.get("kind"), st.get("apiVersion"), st.get("status"),
            st.get("reason"), norm(st.get("message")), causes, hdrs(e.headers) if headers else "")
    except Exception as e:  # the client's own refusals
        out = "%s %s" % (type(e).__name__, norm(e))
    return out


def step(name, fn, headers=True):
    print("%s: %s" % (name, outcome(fn, headers)), flush=True)


def compact():
    """Asks the test running the script to compact etcd at its current
    revision, and waits until it has (see python_client_test.go)."""
    print("@compact", flush=True)
    return sys.stdin.readline() == "\n"


def steps_at_once(*steps):
    """Runs steps (name, fn) at the same time, for watches that last until
    their timeoutSeconds, and prints their lines in order."""
    with concurrent.futures.ThreadPoolExecutor(len(steps)) as pool:
        outs = list(pool.map(lambda s: outcome(s[1]), steps))
    for (name, _), out in zip(steps, outs):
        print("%s: %s" % (name, out), flush=True)


def cm(name, labels=None, data=None):
    return client.V1ConfigMap(
        metadata=client.V1ObjectMeta(name=name, labels=labels), data=data)


def names(lst):
    return [i.metadata.name for i in lst.items]


def delete_then(delete, read):
    delete()
    return read()


# The client's version first: answers on record hold for the version
# that made them.
print("client: kubernetes %s" % kubernetes.__version__, flush=True)

# Typed calls: writes, reads, lists, selectors, pages.
step("version", lambda: (api and client.VersionApi(api).get_code().major,
                         client.VersionApi(api).get_code().minor))
step("create namespace", lambda: core.create_namespace(
    client.V1Namespace(metadata=client.V1ObjectMeta(name=ns))).status.phase)
for n, app in (("a", "web"), ("b", "web"), ("c", "db")):
    step("create " + n, lambda n=n, app=app: core.create_namespaced_config_map(
        ns, cm(n, {"app": app}, {"k": n})).data)
step("get a", lambda: (lambda o: (o.kind, o.api_version, o.metadata.name, o.metadata.labels,
                                  o.data, bool(o.metadata.uid), o.metadata.generation))(
    core.read_namespaced_config_map("a", ns)))
step("list app=web", lambda: (lambda l: (l.kind, l.api_version, names(l), l.metadata._continue))(
    core.list_namespaced_config_map(ns, label_selector="app=web")))
step("list app in (web,db),app!=web", lambda: names(core.list_namespaced_config_map(
    ns, label_selector="app in (web,db),app!=web")))
step("list metadata.name=b", lambda: names(core.list_namespaced_config_map(
    ns, field_selector="metadata.name=b")))
step("list bad label selector", lambda: core.list_namespaced_config_map(ns, label_selector="app in (web"))
step("list bad field selector", lambda: core.list_namespaced_config_map(ns, field_selector="spec.x=y"))
first = core.list_namespaced_config_map(ns, limit=2)
print("page 1: %s %s %s" % (names(first), bool(first.metadata._continue),
                            first.metadata.remaining_item_count), flush=True)
step("page 2", lambda: (lambda l: (names(l), l.metadata._continue, l.metadata.remaining_item_count))(
    core.list_namespaced_config_map(ns, limit=2, _continue=first.metadata._continue)))
step("bad continue", lambda: core.list_namespaced_config_map(ns, limit=2, _continue="garbage"))
step("list rv=0", lambda: names(core.list_namespaced_config_map(ns, resource_version="0")))
step("list rv match exact, no rv", lambda: core.list_namespaced_config_map(
    ns, resource_version_match="Exact"))

# Patches: a dict is a strategic merge patch, a list a JSON patch.
step("strategic patch a", lambda: core.patch_namespaced_config_map(
    "a", ns, {"data": {"k2": "v2"}, "metadata": {"labels": {"tier": "1"}}}).data)
step("json patch a", lambda: core.patch_namespaced_config_map(
    "a", ns, [{"op": "replace", "path": "/data/k", "value": "A"}]).data)
step("json patch test fails", lambda: core.patch_namespaced_config_map(
    "a", ns, [{"op": "test", "path": "/data/k", "value": "nope"}]))
step("json patch bad path", lambda: core.patch_namespaced_config_map(
    "a", ns, [{"op": "remove", "path": "/data/missing"}]))


def stale_replace():
    o = core.read_namespaced_config_map("a", ns)
    core.patch_namespaced_config_map("a", ns, {"data": {"k3": "v3"}})
    o.data["k"] = "stale"
    return core.replace_namespaced_config_map("a", ns, o)


step("replace stale", stale_replace)
step("get missing", lambda: core.read_namespaced_config_map("missing", ns))
step("create bad name", lambda: core.create_namespaced_config_map(ns, cm("Bad_Name", None, {})))
step("create existing", lambda: core.create_namespaced_config_map(ns, cm("a", None, {})))
step("create dry run", lambda: core.create_namespaced_config_map(
    ns, cm("dry", None, {"x": "y"}), dry_run="All").data)
step("get dry run", lambda: core.read_namespaced_config_map("dry", ns))
step("create generateName", lambda: core.create_namespaced_config_map(
    ns, client.V1ConfigMap(metadata=client.V1ObjectMeta(generate_name="gen-"))).metadata.name.startswith("gen-"))
step("create in missing namespace", lambda: core.create_namespaced_config_map(
    "no-such-namespace", cm("x", None, {})))

# Watch: what happened since a list, in order.
rv = core.list_namespaced_config_map(ns).metadata.resource_version
core.create_namespaced_config_map(ns, cm("d", {"app": "web"}, {"k": "d"}))
core.patch_namespaced_config_map("d", ns, {"data": {"k": "D"}})
core.delete_namespaced_config_map("d", ns)


def watch_since():
    w, seen = watch.Watch(), []
    for ev in w.stream(core.list_namespaced_config_map, ns, resource_version=rv,
                       label_selector="app=web", timeout_seconds=30):
        seen.append((ev["type"], ev["object"].metadata.name, ev["object"].data))
        if len(seen) == 3:
            w.stop()
    return seen


step("watch since list", watch_since)
step("watch ends at timeoutSeconds", lambda: [
    (ev["type"], ev["object"].metadata.name) for ev in watch.Watch().stream(
        core.list_namespaced_config_map, ns, label_selector="app=none",
        resource_version=core.list_namespaced_config_map(ns).metadata.resource_version, timeout_seconds=1)])


# Pods: kube's defaults and admission as the typed model reads them.
pod = client.V1Pod(metadata=client.V1ObjectMeta(name="p"), spec=client.V1PodSpec(
    containers=[client.V1Container(name="c", image="busybox")]))


def pod_defaults(p):
    s = p.spec
    c = s.containers[0]
    return (p.status.phase, p.status.qos_class, s.restart_policy, s.dns_policy,
            s.termination_grace_period_seconds, s.scheduler_name, s.priority,
            s.enable_service_links, s.preemption_policy,
            sorted((t.key, t.effect, t.toleration_seconds) for t in s.tolerations or []),
            c.image_pull_policy, c.termination_message_path, c.termination_message_policy)


step("create pod", lambda: pod_defaults(core.create_namespaced_pod(ns, pod)))
step("pod log, no node", lambda: core.read_namespaced_pod_log("p", ns))
step("pod bad image pull policy", lambda: core.create_namespaced_pod(ns, client.V1Pod(
    metadata=client.V1ObjectMeta(name="q"), spec=client.V1PodSpec(containers=[
        client.V1Container(name="c", image="busybox", image_pull_policy="Sometimes")]))))
step("delete pod", lambda: core.delete_namespaced_pod("p", ns).metadata.name)
step("delete missing pod", lambda: core.delete_namespaced_pod("p", ns))
step("delete collection app=web", lambda: core.delete_collection_namespaced_config_map(
    ns, label_selector="app=web") and names(core.list_namespaced_config_map(ns, label_selector="app")))

# Other kinds: their defaults and subresources as the typed models read
# them.
apps = client.AppsV1Api(api)
batch = client.BatchV1Api(api)
authz = client.AuthorizationV1Api(api)
coord = client.CoordinationV1Api(api)
labels = {"app": "d"}
deploy = client.V1Deployment(metadata=client.V1ObjectMeta(name="d"), spec=client.V1DeploymentSpec(
    selector=client.V1LabelSelector(match_labels=labels),
    template=client.V1PodTemplateSpec(metadata=client.V1ObjectMeta(labels=labels), spec=client.V1PodSpec(
        containers=[client.V1Container(name="c", image="busybox")]))))
step("create deployment", lambda: (lambda d: (
    d.spec.replicas, d.spec.revision_history_limit, d.spec.progress_deadline_seconds, d.spec.strategy.type,
    d.spec.strategy.rolling_update.max_surge, d.spec.strategy.rolling_update.max_unavailable,
    d.metadata.generation, d.status.replicas))(apps.create_namespaced_deployment(ns, deploy)))
step("deployment scale", lambda: (lambda s: (s.kind, s.spec.replicas, s.status.replicas, s.status.selector))(
    apps.read_namespaced_deployment_scale("d", ns)))
step("patch deployment scale", lambda: apps.patch_namespaced_deployment_scale(
    "d", ns, {"spec": {"replicas": 3}}).spec.replicas)
step("deployment after scale", lambda: (lambda d: (d.spec.replicas, d.metadata.generation))(
    apps.read_namespaced_deployment("d", ns)))
step("deployment bad selector", lambda: apps.patch_namespaced_deployment(
    "d", ns, {"spec": {"selector": {"matchLabels": {"app": "other"}}}}))
job = client.V1Job(metadata=client.V1ObjectMeta(name="j"), spec=client.V1JobSpec(
    template=client.V1PodTemplateSpec(spec=client.V1PodSpec(restart_policy="Never",
                                                             containers=[client.V1Container(name="c", image="busybox")]))))
step("create job", lambda: (lambda j: (
    j.spec.backoff_limit, j.spec.completions, j.spec.parallelism, j.spec.completion_mode, j.spec.suspend,
    sorted(j.spec.selector.match_labels), sorted(j.spec.template.metadata.labels)))(
    batch.create_namespaced_job(ns, job)))
step("create service", lambda: (lambda v: (
    bool(v.spec.cluster_ip), v.spec.cluster_ip == v.spec.cluster_i_ps[0], v.spec.ip_families, v.spec.ip_family_policy,
    v.spec.session_affinity, v.spec.internal_traffic_policy, v.spec.type,
    [(p.protocol, p.port, p.target_port) for p in v.spec.ports]))(
    core.create_namespaced_service(ns, client.V1Service(metadata=client.V1ObjectMeta(name="s"), spec=client.V1ServiceSpec(
        selector=labels, ports=[client.V1ServicePort(port=80)])))))
step("service bad port", lambda: core.create_namespaced_service(ns, client.V1Service(
    metadata=client.V1ObjectMeta(name="s2"), spec=client.V1ServiceSpec(ports=[client.V1ServicePort(port=70000)]))))
step("create secret stringData", lambda: (lambda x: (x.type, x.data, x.string_data))(
    core.create_namespaced_secret(ns, client.V1Secret(metadata=client.V1ObjectMeta(name="sec"),
                                                      string_data={"u": "me"}))))
step("create service account", lambda: core.create_namespaced_service_account(
    ns, client.V1ServiceAccount(metadata=client.V1ObjectMeta(name="sa"))).metadata.name)
step("service account token", lambda: (lambda r: (bool(r.status.token), bool(r.status.expiration_timestamp),
                                                  r.spec.audiences, r.spec.expiration_seconds))(
    core.create_namespaced_service_account_token("sa", ns, client.AuthenticationV1TokenRequest(
        spec=client.V1TokenRequestSpec(audiences=["a"], expiration_seconds=3600)))))
step("self subject access review", lambda: (lambda r: (r.status.allowed, r.status.denied))(
    authz.create_self_subject_access_review(client.V1SelfSubjectAccessReview(
        spec=client.V1SelfSubjectAccessReviewSpec(resource_attributes=client.V1ResourceAttributes(
            namespace=ns, verb="delete", resource="configmaps"))))))
step("create lease", lambda: (lambda l: (l.spec.holder_identity, l.spec.lease_duration_seconds))(
    coord.create_namespaced_lease(ns, client.V1Lease(metadata=client.V1ObjectMeta(name="l"), spec=client.V1LeaseSpec(
        holder_identity="me", lease_duration_seconds=10)))))
step("all namespaces app", lambda: sorted(  # other tests' objects left out
    i.metadata.name for i in core.list_config_map_for_all_namespaces(label_selector="app").items
    if i.metadata.namespace == ns))
step("foreground delete", lambda: delete_then(
    lambda: core.delete_namespaced_config_map("c", ns, propagation_policy="Foreground"),
    lambda: (lambda o: (o.metadata.finalizers, bool(o.metadata.deletion_timestamp)))(
        core.read_namespaced_config_map("c", ns))))
step("evict pod without node", lambda: delete_then(
    lambda: (core.create_namespaced_pod(ns, client.V1Pod(metadata=client.V1ObjectMeta(name="e"), spec=client.V1PodSpec(
        containers=[client.V1Container(name="c", image="busybox")]))),
             core.create_namespaced_pod_eviction("e", ns, client.V1Eviction(metadata=client.V1ObjectMeta(name="e")))),
    lambda: core.read_namespaced_pod("e", ns)))

# A custom resource: the CRD by the typed API, its objects by
# CustomObjectsApi and by the dynamic client (through discovery).
crd = client.V1CustomResourceDefinition(
    metadata=client.V1ObjectMeta(name=PLURAL + "." + GROUP),
    spec=client.V1CustomResourceDefinitionSpec(
        group=GROUP, scope="Namespaced",
        names=client.V1CustomResourceDefinitionNames(plural=PLURAL, singular="widget", kind="Widget"),
        versions=[client.V1CustomResourceDefinitionVersion(
            name="v1", served=True, storage=True,
            subresources=client.V1CustomResourceSubresources(status={}),
            schema=client.V1CustomResourceValidation(open_apiv3_schema=client.V1JSONSchemaProps(
                type="object", properties={
                    "spec": client.V1JSONSchemaProps(type="object", properties={
                        "size": client.V1JSONSchemaProps(type="integer", maximum=10)}),
                    "status": client.V1JSONSchemaProps(type="object", properties={
                        "ready": client.V1JSONSchemaProps(type="boolean")})})))]))
step("create crd", lambda: ext.create_custom_resource_definition(crd).metadata.name)


def established():
    deadline = time.monotonic() + 180  # a deadline, not a synchronisation
    while time.monotonic() < deadline:
        got = ext.read_custom_resource_definition(PLURAL + "." + GROUP)
        for c in (got.status and got.status.conditions) or []:
            if c.type == "Established" and c.status == "True":
                return True
        time.sleep(0.05)
    return False


step("crd established", established)


def widget(name, size):
    return {"apiVersion": GROUP + "/v1", "kind": "Widget",
            "metadata": {"name": name}, "spec": {"size": size}}


def resolve(api_version, kind):
    """The dynamic client and its resource for kind, once discovery has
    it. Discovery walks every group-version the server lists, and one may
    go away between the list and its read (another test's CRD, on a
    shared kube-apiserver): then it starts again, without its cache."""
    deadline = time.monotonic() + 180  # a deadline, not a synchronisation
    while True:
        try:
            dyn = dynamic.DynamicClient(api, cache_file=cache_file)
            return dyn, dyn.resources.get(api_version=api_version, kind=kind)
        except (ResourceNotFoundError, NotFoundError):
            if time.monotonic() > deadline:
                raise
            if os.path.exists(cache_file):
                os.remove(cache_file)
            time.sleep(0.05)


step("custom create w1", lambda: custom.create_namespaced_custom_object(
    GROUP, "v1", ns, PLURAL, widget("w1", 3))["spec"])
step("custom create too big", lambda: custom.create_namespaced_custom_object(
    GROUP, "v1", ns, PLURAL, widget("w2", 11)))
step("custom create wrong type", lambda: custom.create_namespaced_custom_object(
    GROUP, "v1", ns, PLURAL, widget("w2", "big")))
step("custom get", lambda: (lambda o: (o["kind"], o["apiVersion"], o["spec"], "status" in o))(
    custom.get_namespaced_custom_object(GROUP, "v1", ns, PLURAL, "w1")))
step("custom list", lambda: (lambda l: (l["kind"], [i["metadata"]["name"] for i in l["items"]]))(
    custom.list_namespaced_custom_object(GROUP, "v1", ns, PLURAL)))
step("custom merge patch", lambda: (lambda o: o["spec"])(custom.patch_namespaced_custom_object(
    GROUP, "v1", ns, PLURAL, "w1", {"spec": {"size": 4}})))
step("custom patch status ignores spec", lambda: (lambda o: (o["spec"], o.get("status")))(
    custom.replace_namespaced_custom_object_status(GROUP, "v1", ns, PLURAL, "w1", dict(
        custom.get_namespaced_custom_object(GROUP, "v1", ns, PLURAL, "w1"),
        spec={"size": 9}, status={"ready": True}))))
dyn, widgets = resolve(GROUP + "/v1", "Widget")
step("dynamic resource", lambda: (widgets.kind, widgets.name, widgets.namespaced,
                                  sorted(widgets.subresources)))
step("dynamic create w3", lambda: dyn.create(widgets, body=widget("w3", 5), namespace=ns).spec.size)
step("dynamic merge patch", lambda: dyn.patch(widgets, body={"spec": {"size": 6}}, name="w3", namespace=ns,
                                              content_type="application/merge-patch+json").spec.size)
step("dynamic list", lambda: sorted(i.metadata.name for i in dyn.get(widgets, namespace=ns).items))
step("dynamic get missing", lambda: dyn.get(widgets, name="nope", namespace=ns))
step("dynamic configmaps", lambda: sorted(
    i.metadata.name for i in dyn.get(resolve("v1", "ConfigMap")[1], namespace=ns).items
    if not i.metadata.name.startswith("gen-") and i.metadata.name != "kube-root-ca.crt"))
step("dynamic delete w3", lambda: (lambda r: (r.kind, r.status, r.details and r.details.name))(
    dyn.delete(widgets, name="w3", namespace=ns)))


step("custom replace missing", lambda: custom.replace_namespaced_custom_object(
    GROUP, "v1", ns, PLURAL, "nope", widget("nope", 1)))
step("custom create bad name", lambda: custom.create_namespaced_custom_object(
    GROUP, "v1", ns, PLURAL, widget("Bad_Name", 1)))
step("custom create name mismatch kind", lambda: custom.create_namespaced_custom_object(
    GROUP, "v1", ns, PLURAL, dict(widget("w5", 1), kind="Gadget")))
step("custom replace other kind", lambda: custom.replace_namespaced_custom_object(
    GROUP, "v1", ns, PLURAL, "w1", dict(custom.get_namespaced_custom_object(GROUP, "v1", ns, PLURAL, "w1"), kind="Gadget")))
step("custom patch other kind", lambda: custom.patch_namespaced_custom_object(
    GROUP, "v1", ns, PLURAL, "w1", {"kind": "Gadget"}))
step("custom status other kind", lambda: (lambda o: (o["kind"], o["spec"], o["status"]))(
    custom.replace_namespaced_custom_object_status(GROUP, "v1", ns, PLURAL, "w1", dict(
        custom.get_namespaced_custom_object(GROUP, "v1", ns, PLURAL, "w1"), kind="Gadget", status={"ready": False}))))
# Both servers also warn of the body's fields as unknown to the version it
# names (TestKubeCROtherVersionSameAsOurs has more such writes).
step("custom create other version", lambda: custom.create_namespaced_custom_object(
    GROUP, "v1", ns, PLURAL, dict(widget("w5", 1), apiVersion=GROUP + "/v2")))
step("custom get unknown version", lambda: custom.get_namespaced_custom_object(GROUP, "v2", ns, PLURAL, "w1"))
step("custom get as cluster-scoped", lambda: custom.get_cluster_custom_object(GROUP, "v1", PLURAL, "w1"))
step("custom list field selector", lambda: [i["metadata"]["name"] for i in custom.list_namespaced_custom_object(
    GROUP, "v1", ns, PLURAL, field_selector="metadata.name=w1")["items"]])
step("custom list bad field selector", lambda: custom.list_namespaced_custom_object(
    GROUP, "v1", ns, PLURAL, field_selector="spec.size=1"))
step("custom list pages", lambda: (lambda p1: (
    [i["metadata"]["name"] for i in p1["items"]], bool(p1["metadata"].get("continue")),
    p1["metadata"].get("remainingItemCount"),
    [i["metadata"]["name"] for i in custom.list_namespaced_custom_object(
        GROUP, "v1", ns, PLURAL, limit=1, _continue=p1["metadata"]["continue"])["items"]]))(
    custom.list_namespaced_custom_object(GROUP, "v1", ns, PLURAL, limit=1)))


def watch_custom():
    rv = custom.list_namespaced_custom_object(GROUP, "v1", ns, PLURAL)["metadata"]["resourceVersion"]
    custom.patch_namespaced_custom_object(GROUP, "v1", ns, PLURAL, "w1", {"spec": {"size": 7}})
    w, seen = watch.Watch(), []
    for ev in w.stream(custom.list_namespaced_custom_object, GROUP, "v1", ns, PLURAL,
                       resource_version=rv, timeout_seconds=30):
        seen.append((ev["type"], ev["object"]["kind"], ev["object"]["metadata"]["name"], ev["object"]["spec"]))
        w.stop()
    return seen


step("custom watch", watch_custom)
step("custom create w4", lambda: custom.create_namespaced_custom_object(
    GROUP, "v1", ns, PLURAL, widget("w4", 1))["spec"])
step("custom delete collection", lambda: (lambda r: (
    r.get("kind"), r.get("apiVersion"), r.get("status"), sorted(i["metadata"]["name"] for i in r.get("items") or [])))(
    custom.delete_collection_namespaced_custom_object(GROUP, "v1", ns, PLURAL)))
step("custom list after", lambda: [i["metadata"]["name"] for i in custom.list_namespaced_custom_object(
    GROUP, "v1", ns, PLURAL)["items"]])
def extended(ns):
    """What Python programs do beyond the basics, in a namespace of its
    own: response headers, raw reads, pages with selectors, watches with
    bookmarks, field selectors of many kinds, every kind of patch and of
    delete, server-side apply by the dynamic client, pod logs and exec
    without a kubelet, version and discovery, authorization reviews, and a
    custom resource's status and scale subresources."""
    GROUP, PLURAL = "pyprobe.example.com", "gizmos"
    authn = client.AuthenticationV1Api(api)
    step("more: namespace", lambda: core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=ns))).status.phase)
    for n, tier in (("m1", "a"), ("m2", "a"), ("m3", "b"), ("m4", "a")):
        core.create_namespaced_config_map(ns, cm(n, {"tier": tier}, {"k": n}))

    # headers of a success
    step("get headers", lambda: (core.read_namespaced_config_map("m1", ns).data, last()))
    step("list headers", lambda: (names(core.list_namespaced_config_map(ns, label_selector="tier")), last()))

    # raw reads
    def raw(fn, *a, **kw):
        r = fn(*a, _preload_content=False, **kw)
        b = json.loads(r.data)
        return (r.status, r.headers.get("Content-Type"), b.get("kind"), b.get("apiVersion"),
                sorted(b.keys()), bool(r.headers.get("Audit-Id")))
    step("raw get", lambda: raw(core.read_namespaced_config_map, "m1", ns))
    step("raw list", lambda: raw(core.list_namespaced_config_map, ns, label_selector="tier=a"))
    step("raw missing", lambda: raw(core.read_namespaced_config_map, "nope", ns))
    step("raw version", lambda: raw(client.VersionApi(api).get_code))

    # paging with a selector
    def pages(**kw):
        out, cont = [], None
        while True:
            l = core.list_namespaced_config_map(ns, limit=1, _continue=cont, **kw)
            out.append((names(l), bool(l.metadata._continue), l.metadata.remaining_item_count))
            cont = l.metadata._continue
            if not cont or len(out) > 6:
                return out
    step("pages tier=a", lambda: pages(label_selector="tier=a"))
    step("pages field", lambda: pages(field_selector="metadata.name!=m2"))
    step("pages limit 0", lambda: names(core.list_namespaced_config_map(ns, limit=0, label_selector="tier")))
    step("continue other selector", lambda: names(core.list_namespaced_config_map(ns, limit=1, label_selector="tier=b",
        _continue=core.list_namespaced_config_map(ns, limit=1, label_selector="tier=a").metadata._continue)))
    step("list rv notolderthan", lambda: names(core.list_namespaced_config_map(ns, resource_version="0", resource_version_match="NotOlderThan", label_selector="tier")))
    step("list rv exact old", lambda: names(core.list_namespaced_config_map(ns, resource_version="1", resource_version_match="Exact")))
    step("list rv bad", lambda: core.list_namespaced_config_map(ns, resource_version="abc"))
    step("list rv bad match", lambda: core.list_namespaced_config_map(ns, resource_version="0", resource_version_match="Sometimes"))

    # watches
    rv0 = core.list_namespaced_config_map(ns).metadata.resource_version
    core.patch_namespaced_config_map("m1", ns, {"data": {"k": "M1"}})
    def wb():
        w, seen = watch.Watch(), []
        for ev in w.stream(core.list_namespaced_config_map, ns, resource_version=rv0, allow_watch_bookmarks=True,
                           timeout_seconds=30):
            if ev["type"] == "BOOKMARK":
                continue
            seen.append((ev["type"], ev["object"].metadata.name, ev["object"].data))
            w.stop()
        return seen
    step("watch bookmarks allowed", wb)
    def quiet_bookmarks():
        """A watch of a namespace nobody writes to: kube sends no bookmark at
        or before the resourceVersion it began at (one after it, when etcd
        moved on meanwhile, is a matter of timing and not printed)."""
        start = int(core.list_namespaced_config_map(ns).metadata.resource_version)
        seen = []
        for ev in watch.Watch().stream(core.list_namespaced_config_map, ns, label_selector="tier=none",
                                       resource_version=str(start), allow_watch_bookmarks=True, timeout_seconds=3):
            o = ev["raw_object"]
            if ev["type"] != "BOOKMARK" or int(o["metadata"]["resourceVersion"]) <= start:
                seen.append((ev["type"], o.get("kind"), o.get("apiVersion"), sorted(o["metadata"])))
        return seen
    steps_at_once(
        ("watch bookmarks, nothing written", quiet_bookmarks),
        ("watch rv 0", lambda: sorted((ev["type"], ev["object"].metadata.name) for ev in watch.Watch().stream(
            core.list_namespaced_config_map, ns, label_selector="tier", resource_version="0", timeout_seconds=1))),
        ("watch no rv", lambda: sorted((ev["type"], ev["object"].metadata.name) for ev in watch.Watch().stream(
            core.list_namespaced_config_map, ns, label_selector="tier=b", timeout_seconds=1))),
        ("watch field selector", lambda: sorted((ev["type"], ev["object"].metadata.name) for ev in watch.Watch().stream(
            core.list_namespaced_config_map, ns, field_selector="metadata.name=m3", resource_version="0",
            timeout_seconds=1))),
        ("watch namespaces", lambda: sorted((ev["type"], ev["object"].metadata.name) for ev in watch.Watch().stream(
            core.list_namespace, field_selector="metadata.name=" + ns, timeout_seconds=1))),
        ("watch raw headers", lambda: (lambda r: (
            r.status, r.headers.get("Content-Type"), bool(r.headers.get("Audit-Id")), r.headers.get("Transfer-Encoding")))(
            core.list_namespaced_config_map(ns, watch=True, timeout_seconds=1, _preload_content=False))))

    # field selectors on many kinds
    def fs(fn, sel, *a):
        return sorted(i.metadata.name for i in fn(*a, field_selector=sel).items)
    pod = lambda n, **kw: client.V1Pod(metadata=client.V1ObjectMeta(name=n, labels={"run": n}), spec=client.V1PodSpec(
        containers=[client.V1Container(name="c", image="busybox")], **kw))
    core.create_namespaced_pod(ns, pod("p1"))
    core.create_namespaced_pod(ns, pod("p2", node_name="n1", restart_policy="Never"))
    core.create_namespaced_secret(ns, client.V1Secret(metadata=client.V1ObjectMeta(name="s1"), type="kubernetes.io/basic-auth", string_data={"username": "u"}))
    core.create_namespaced_secret(ns, client.V1Secret(metadata=client.V1ObjectMeta(name="s2"), string_data={"x": "y"}))
    for sel in ("spec.nodeName=n1", "spec.nodeName=", "status.phase=Pending", "spec.restartPolicy=Never",
                "spec.schedulerName=default-scheduler", "spec.serviceAccountName=default", "status.podIP=",
                "status.nominatedNodeName=", "metadata.name=p1,spec.nodeName!=n1", "spec.hostNetwork=false", "spec.x=1"):
        step("pods " + sel, lambda sel=sel: fs(core.list_namespaced_pod, sel, ns))
    for sel in ("type=Opaque", "type=kubernetes.io/basic-auth", "data=x"):
        step("secrets " + sel, lambda sel=sel: fs(core.list_namespaced_secret, sel, ns))
    step("namespaces status.phase", lambda: ns in fs(core.list_namespace, "status.phase=Active"))
    step("namespaces name", lambda: fs(core.list_namespace, "metadata.name=" + ns))
    step("namespaces bad", lambda: fs(core.list_namespace, "spec.finalizers=x"))
    step("events bad", lambda: fs(core.list_namespaced_event, "involvedObject.bad=x", ns))
    step("events ok", lambda: fs(core.list_namespaced_event, "involvedObject.kind=Pod,reason=x,source=y,type=Normal,involvedObject.fieldPath=z", ns))
    step("services", lambda: fs(core.list_namespaced_service, "spec.clusterIP=1.2.3.4", ns))
    step("services bad", lambda: fs(core.list_namespaced_service, "spec.type=ClusterIP", ns))
    step("nodes", lambda: fs(core.list_node, "spec.unschedulable=false"))
    step("nodes bad", lambda: fs(core.list_node, "spec.podCIDR=x"))
    step("replicasets", lambda: fs(apps.list_namespaced_replica_set, "status.replicas=0", ns))
    step("jobs", lambda: fs(batch.list_namespaced_job, "status.successful=1", ns))
    step("deployments bad", lambda: fs(apps.list_namespaced_deployment, "status.replicas=0", ns))
    step("pvs", lambda: fs(core.list_persistent_volume, "name=x"))
    step("rcs", lambda: fs(core.list_namespaced_replication_controller, "status.replicas=0", ns))
    step("endpoints", lambda: fs(core.list_namespaced_endpoints, "metadata.name=x", ns))
    step("sas", lambda: fs(core.list_namespaced_service_account, "metadata.name=default", ns))
    step("csrs", lambda: fs(client.CertificatesV1Api(api).list_certificate_signing_request, "spec.signerName=x"))
    step("label set ops", lambda: sorted(i.metadata.name for i in core.list_namespaced_config_map(ns, label_selector="tier notin (b),!missing").items))
    step("label exists not", lambda: sorted(i.metadata.name for i in core.list_namespaced_config_map(ns, label_selector="!tier").items))
    step("label bad value", lambda: core.list_namespaced_config_map(ns, label_selector="tier=a b"))
    step("label gt", lambda: names(core.list_namespaced_config_map(ns, label_selector="tier>1")))
    step("pods label", lambda: sorted(i.metadata.name for i in core.list_namespaced_pod(ns, label_selector="run in (p1,p3)").items))

    # patches
    step("merge patch as strategic? dict", lambda: core.patch_namespaced_config_map("m1", ns, {"data": {"x": None}, "metadata": {"labels": {"tier": None}}}).metadata.labels)
    step("patch pod containers strategic", lambda: [c.image for c in core.patch_namespaced_pod("p1", ns, {"spec": {"containers": [{"name": "c", "image": "busybox:2"}]}}).spec.containers])
    step("json patch add label", lambda: core.patch_namespaced_config_map("m1", ns, [{"op": "add", "path": "/metadata/labels", "value": {"z": "1"}}]).metadata.labels)
    step("json patch bad op", lambda: core.patch_namespaced_config_map("m1", ns, [{"op": "frob", "path": "/data"}]))
    step("json patch not list of ops", lambda: core.patch_namespaced_config_map("m1", ns, [1, 2]))
    step("empty patch", lambda: core.patch_namespaced_config_map("m1", ns, {}).data)
    step("empty json patch", lambda: core.patch_namespaced_config_map("m1", ns, []).data)
    step("patch missing", lambda: core.patch_namespaced_config_map("nope", ns, {"data": {"a": "b"}}))
    step("patch missing json", lambda: core.patch_namespaced_config_map("nope", ns, [{"op": "add", "path": "/data/a", "value": "b"}]))
    step("patch name change", lambda: core.patch_namespaced_config_map("m1", ns, {"metadata": {"name": "other"}}))
    step("patch rv stale", lambda: core.patch_namespaced_config_map("m1", ns, {"metadata": {"resourceVersion": "1"}}))
    step("patch dry run", lambda: (core.patch_namespaced_config_map("m1", ns, {"data": {"dry": "1"}}, dry_run="All").data, core.read_namespaced_config_map("m1", ns).data))
    step("patch bad dry run", lambda: core.patch_namespaced_config_map("m1", ns, {"data": {"dry": "1"}}, dry_run="Some"))
    step("patch field manager", lambda: sorted((f.manager, f.operation) for f in core.patch_namespaced_config_map("m1", ns, {"data": {"fm": "1"}}, field_manager="pyfm").metadata.managed_fields))
    step("patch force non-apply", lambda: core.patch_namespaced_config_map("m1", ns, {"data": {"fm": "2"}}, field_manager="pyfm", force=True))
    step("patch force false", lambda: core.patch_namespaced_config_map("m1", ns, {"data": {"fm": "2"}}, force=False).data)
    step("patch bad field manager", lambda: core.patch_namespaced_config_map("m1", ns, {"data": {"fm": "3"}}, field_manager="x" * 200))
    step("replace dry run", lambda: (core.replace_namespaced_config_map("m1", ns, cm("m1", {"tier": "a"}, {"r": "1"}), dry_run="All").data, core.read_namespaced_config_map("m1", ns).data))
    step("delete dry run", lambda: (core.delete_namespaced_config_map("m4", ns, dry_run="All").kind, core.read_namespaced_config_map("m4", ns).metadata.name))
    step("create bad dry run", lambda: core.create_namespaced_config_map(ns, cm("dd"), dry_run="all"))

    # deletes
    step("delete body propagation", lambda: (lambda r: (r.kind, r.status, r.details and r.details.name))(
        core.delete_namespaced_config_map("m4", ns, body=client.V1DeleteOptions(propagation_policy="Background"))))
    step("delete body orphan", lambda: (lambda r: (r.kind, r.metadata.name))(
        core.delete_namespaced_pod("p2", ns, body=client.V1DeleteOptions(propagation_policy="Orphan", grace_period_seconds=0))))
    step("delete body bad policy", lambda: core.delete_namespaced_config_map("m3", ns, body=client.V1DeleteOptions(propagation_policy="Sometimes")))
    step("delete body precondition", lambda: core.delete_namespaced_config_map("m3", ns, body=client.V1DeleteOptions(preconditions=client.V1Preconditions(uid="nope"))))
    step("delete body both", lambda: core.delete_namespaced_config_map("m3", ns, body=client.V1DeleteOptions(propagation_policy="Orphan", orphan_dependents=True)))
    step("delete grace neg", lambda: (lambda r: r.metadata.name)(core.delete_namespaced_pod("p1", ns, grace_period_seconds=-1)))
    step("delete query and body", lambda: (lambda o: (o.kind, o.metadata.name, o.metadata.finalizers, bool(o.metadata.deletion_timestamp)))(
        core.delete_namespaced_config_map("m3", ns, propagation_policy="Foreground", body=client.V1DeleteOptions(propagation_policy="Orphan"), dry_run="All")))
    step("delete collection", lambda: (lambda r: (r.kind, r.api_version, r.status))(
        core.delete_collection_namespaced_secret(ns, field_selector="type=Opaque")))
    step("delete collection dry", lambda: (core.delete_collection_namespaced_secret(ns, dry_run="All").kind, fs(core.list_namespaced_secret, "", ns)))
    step("delete collection body", lambda: (core.delete_collection_namespaced_secret(ns, body=client.V1DeleteOptions(propagation_policy="Orphan")).kind, fs(core.list_namespaced_secret, "", ns)))
    step("delete collection bad sel", lambda: core.delete_collection_namespaced_secret(ns, label_selector="a in ("))
    step("delete collection bad field", lambda: core.delete_collection_namespaced_secret(ns, field_selector="spec.x=1"))
    step("delete collection limit", lambda: core.delete_collection_namespaced_config_map(ns, limit=1).kind)

    # dynamic
    dyn, cms = resolve("v1", "ConfigMap")
    step("dyn resource", lambda: (cms.kind, cms.name, cms.namespaced, cms.group_version, sorted(cms.verbs), cms.short_names, cms.categories))
    step("dyn deploy resource", lambda: (lambda r: (r.kind, r.name, r.group_version, sorted(r.verbs), r.short_names, r.categories, sorted(r.subresources)))(dyn.resources.get(api_version="apps/v1", kind="Deployment")))
    step("dyn get", lambda: (lambda o: (o.kind, o.metadata.name, dict(o.data)))(dyn.get(cms, name="m3", namespace=ns)))
    step("dyn list labels", lambda: sorted(i.metadata.name for i in dyn.get(cms, namespace=ns, label_selector="tier").items))
    step("dyn strategic patch", lambda: dict(dyn.patch(cms, body={"data": {"s": "1"}}, name="m3", namespace=ns).data))
    step("dyn json patch", lambda: dict(dyn.patch(cms, body=[{"op": "add", "path": "/data/j", "value": "1"}], name="m3", namespace=ns, content_type="application/json-patch+json").data))
    step("dyn ssa dict", lambda: dyn.server_side_apply(cms, body={"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ap"}, "data": {"a": "1"}}, namespace=ns, field_manager="py"))
    def ssa(body, **kw):
        o = dyn.server_side_apply(cms, body=json.dumps(body), name=body["metadata"]["name"], namespace=ns, **kw)
        return dict(o.data or {}), sorted((f.manager, f.operation) for f in o.metadata.managedFields)
    apbody = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ap"}, "data": {"a": "1"}}
    step("dyn ssa create", lambda: ssa(apbody, field_manager="py"))
    step("dyn ssa conflict", lambda: ssa(dict(apbody, data={"a": "2"}), field_manager="other"))
    step("dyn ssa force", lambda: ssa(dict(apbody, data={"a": "2"}), field_manager="other", force_conflicts=True))
    step("dyn ssa no manager", lambda: ssa(apbody))
    step("dyn ssa dry run", lambda: (ssa(dict(apbody, data={"a": "3"}), field_manager="other", dry_run="All"), dict(dyn.get(cms, name="ap", namespace=ns).data)))
    step("dyn ssa yaml", lambda: dict(dyn.server_side_apply(cms, body="apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ap2\ndata:\n  y: '1'\n", name="ap2", namespace=ns, field_manager="py").data))
    step("dyn ssa bad yaml", lambda: dyn.server_side_apply(cms, body="a: [", name="ap2", namespace=ns, field_manager="py"))
    step("dyn ssa name mismatch", lambda: dyn.server_side_apply(cms, body=json.dumps(dict(apbody, metadata={"name": "zz"})), name="ap", namespace=ns, field_manager="py"))
    step("dyn ssa no kind", lambda: dyn.server_side_apply(cms, body=json.dumps({"metadata": {"name": "ap"}}), name="ap", namespace=ns, field_manager="py"))
    step("typed patch apply force", lambda: core.patch_namespaced_config_map("ap", ns, {"data": {"a": "9"}}, field_manager="typed", force=True))
    def dwatch():
        rv = dyn.get(cms, namespace=ns).metadata.resourceVersion
        dyn.patch(cms, body={"data": {"w": "1"}}, name="m3", namespace=ns)
        for ev in dyn.watch(cms, namespace=ns, resource_version=rv, timeout=10):
            return (ev["type"], ev["object"].metadata.name, ev["object"].data.w)
    step("dyn watch", dwatch)
    step("dyn delete", lambda: (lambda r: (r.kind, r.status, r.details.name, r.details.kind))(dyn.delete(cms, name="ap2", namespace=ns)))
    step("dyn delete collection", lambda: (lambda r: (r.kind, sorted(i.metadata.name for i in r.items)))(dyn.delete(cms, namespace=ns, label_selector="tier=b")))
    step("dyn get missing kind", lambda: dyn.resources.get(api_version="v1", kind="Nope"))
    step("dyn ns resource", lambda: (lambda r: (r.kind, r.namespaced, sorted(r.subresources)))(dyn.resources.get(api_version="v1", kind="Namespace")))
    step("dyn pods subresources", lambda: sorted(dyn.resources.get(api_version="v1", kind="Pod").subresources))

    # pod log / exec
    core.create_namespaced_pod(ns, pod("p3"))
    core.create_namespaced_pod(ns, pod("p4", node_name="n1"))
    step("log no node", lambda: core.read_namespaced_pod_log("p3", ns))
    step("log container missing", lambda: core.read_namespaced_pod_log("p3", ns, container="zz"))
    step("log missing pod", lambda: core.read_namespaced_pod_log("nope", ns))
    step("log node missing", lambda: core.read_namespaced_pod_log("p4", ns))
    step("log bad tail", lambda: core.read_namespaced_pod_log("p3", ns, tail_lines=-1))
    step("log follow", lambda: core.read_namespaced_pod_log("p3", ns, follow=True, _preload_content=False).data)
    step("exec typed", lambda: core.connect_get_namespaced_pod_exec("p3", ns, command=["ls"], stdout=True))
    step("exec typed node", lambda: core.connect_get_namespaced_pod_exec("p4", ns, command=["ls"], stdout=True))
    step("exec missing", lambda: core.connect_get_namespaced_pod_exec("nope", ns, command=["ls"], stdout=True))
    from kubernetes.stream import stream
    step("exec stream", lambda: stream(core.connect_get_namespaced_pod_exec, "p3", ns, command=["ls"], stdout=True, stderr=True, stdin=False, tty=False))
    step("exec stream node", lambda: stream(core.connect_get_namespaced_pod_exec, "p4", ns, command=["ls"], stdout=True, stderr=True, stdin=False, tty=False))
    step("portforward", lambda: core.connect_get_namespaced_pod_portforward("p3", ns, ports=80))
    step("proxy", lambda: core.connect_get_namespaced_pod_proxy("p3", ns))
    step("attach", lambda: core.connect_get_namespaced_pod_attach("p3", ns, stdout=True))

    # version / discovery
    step("version details", lambda: (lambda v: (v.major, v.minor, v.git_version, v.platform, bool(v.go_version), v.git_tree_state))(client.VersionApi(api).get_code()))
    step("core versions", lambda: (lambda v: (v.kind, v.versions, v.api_version, len(v.server_address_by_client_cid_rs or [])))(client.CoreApi(api).get_api_versions()))
    step("apis groups", lambda: (lambda g: (g.kind, g.api_version, [(x.name, [v.version for v in x.versions], x.preferred_version.version) for x in g.groups if not x.name.endswith(".example.com")]))(client.ApisApi(api).get_api_versions()))
    step("apps group", lambda: (lambda g: (g.kind, g.name, [v.group_version for v in g.versions], g.preferred_version.group_version))(client.AppsApi(api).get_api_group()))
    step("apps resources", lambda: (lambda r: (r.kind, r.group_version, sorted((x.name, x.namespaced, x.kind, tuple(x.verbs or []), tuple(x.short_names or []), tuple(x.categories or []), x.group, x.version) for x in r.resources)))(apps.get_api_resources()))
    step("core resources", lambda: (lambda r: (r.kind, r.group_version, sorted((x.name, x.namespaced, x.kind, tuple(x.verbs or []), tuple(x.short_names or [])) for x in r.resources)))(core.get_api_resources()))
    step("authz resources", lambda: (lambda r: sorted((x.name, tuple(x.verbs)) for x in r.resources))(authz.get_api_resources()))

    # authorization reviews
    ra = lambda **kw: client.V1ResourceAttributes(**kw)
    step("ssar", lambda: (lambda r: (r.status.allowed, r.status.denied, r.status.reason, r.status.evaluation_error, r.spec.resource_attributes.namespace))(
        authz.create_self_subject_access_review(client.V1SelfSubjectAccessReview(spec=client.V1SelfSubjectAccessReviewSpec(resource_attributes=ra(namespace=ns, verb="get", resource="pods"))))))
    step("ssar nonresource", lambda: (lambda r: (r.status.allowed, r.status.reason))(
        authz.create_self_subject_access_review(client.V1SelfSubjectAccessReview(spec=client.V1SelfSubjectAccessReviewSpec(non_resource_attributes=client.V1NonResourceAttributes(path="/healthz", verb="get"))))))
    step("ssar empty", lambda: authz.create_self_subject_access_review(client.V1SelfSubjectAccessReview(spec=client.V1SelfSubjectAccessReviewSpec())))
    step("ssar both", lambda: authz.create_self_subject_access_review(client.V1SelfSubjectAccessReview(spec=client.V1SelfSubjectAccessReviewSpec(
        resource_attributes=ra(verb="get", resource="pods"), non_resource_attributes=client.V1NonResourceAttributes(path="/x", verb="get")))))
    step("sar alice", lambda: (lambda r: (r.status.allowed, r.status.denied, r.status.reason))(authz.create_subject_access_review(client.V1SubjectAccessReview(spec=client.V1SubjectAccessReviewSpec(
        user="alice", resource_attributes=ra(namespace=ns, verb="get", resource="pods"))))))
    step("sar masters", lambda: (lambda r: (r.status.allowed, r.status.denied, r.status.reason))(authz.create_subject_access_review(client.V1SubjectAccessReview(spec=client.V1SubjectAccessReviewSpec(
        user="bob", groups=["system:masters"], resource_attributes=ra(namespace=ns, verb="get", resource="pods"))))))
    step("sar no user", lambda: authz.create_subject_access_review(client.V1SubjectAccessReview(spec=client.V1SubjectAccessReviewSpec(
        resource_attributes=ra(namespace=ns, verb="get", resource="pods")))))
    step("lsar", lambda: (lambda r: (r.status.allowed, r.status.reason, r.metadata.namespace))(authz.create_namespaced_local_subject_access_review(ns, client.V1LocalSubjectAccessReview(
        metadata=client.V1ObjectMeta(namespace=ns), spec=client.V1SubjectAccessReviewSpec(user="alice", resource_attributes=ra(namespace=ns, verb="get", resource="pods"))))))
    step("lsar ns mismatch", lambda: authz.create_namespaced_local_subject_access_review(ns, client.V1LocalSubjectAccessReview(
        metadata=client.V1ObjectMeta(namespace=ns), spec=client.V1SubjectAccessReviewSpec(user="alice", resource_attributes=ra(namespace="other", verb="get", resource="pods")))))
    step("ssrr", lambda: (lambda r: (r.status.incomplete, bool(r.status.resource_rules), bool(r.status.non_resource_rules), r.status.evaluation_error))(
        authz.create_self_subject_rules_review(client.V1SelfSubjectRulesReview(spec=client.V1SelfSubjectRulesReviewSpec(namespace=ns)))))
    step("ssr", lambda: (lambda r: (r.status.user_info.username, sorted(r.status.user_info.groups or [])))(
        authn.create_self_subject_review(client.V1SelfSubjectReview())))

    # custom objects
    crd = client.V1CustomResourceDefinition(
        metadata=client.V1ObjectMeta(name=PLURAL + "." + GROUP),
        spec=client.V1CustomResourceDefinitionSpec(group=GROUP, scope="Namespaced",
            names=client.V1CustomResourceDefinitionNames(plural=PLURAL, singular="gizmo", kind="Gizmo", short_names=["gz"], categories=["all"]),
            versions=[client.V1CustomResourceDefinitionVersion(name="v1", served=True, storage=True,
                subresources=client.V1CustomResourceSubresources(status={}, scale=client.V1CustomResourceSubresourceScale(
                    spec_replicas_path=".spec.replicas", status_replicas_path=".status.replicas", label_selector_path=".status.selector")),
                schema=client.V1CustomResourceValidation(open_apiv3_schema=client.V1JSONSchemaProps(type="object", properties={
                    "spec": client.V1JSONSchemaProps(type="object", properties={"replicas": client.V1JSONSchemaProps(type="integer"), "color": client.V1JSONSchemaProps(type="string")}),
                    "status": client.V1JSONSchemaProps(type="object", properties={"replicas": client.V1JSONSchemaProps(type="integer"), "selector": client.V1JSONSchemaProps(type="string")})})))]))
    ext.create_custom_resource_definition(crd)
    def established():
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            got = ext.read_custom_resource_definition(PLURAL + "." + GROUP)
            for c in (got.status and got.status.conditions) or []:
                if c.type == "Established" and c.status == "True":
                    return True
            time.sleep(0.05)
        return False
    step("established", established)
    def gz(name, **spec):
        return {"apiVersion": GROUP + "/v1", "kind": "Gizmo", "metadata": {"name": name, "labels": {"g": name}}, "spec": spec}
    step("co create unknown field", lambda: (custom.create_namespaced_custom_object(GROUP, "v1", ns, PLURAL, gz("g1", replicas=1, bogus=2))["spec"], last()))
    step("co create", lambda: custom.create_namespaced_custom_object(GROUP, "v1", ns, PLURAL, gz("g2", replicas=2, color="red"))["spec"])
    step("co create dry", lambda: (custom.create_namespaced_custom_object(GROUP, "v1", ns, PLURAL, gz("g3"), dry_run="All")["metadata"]["name"]))
    step("co get", lambda: custom.get_namespaced_custom_object(GROUP, "v1", ns, PLURAL, "g3"))
    step("co list label", lambda: [i["metadata"]["name"] for i in custom.list_namespaced_custom_object(GROUP, "v1", ns, PLURAL, label_selector="g in (g2)")["items"]])
    step("co list all ns", lambda: sorted(i["metadata"]["name"] for i in custom.list_cluster_custom_object(GROUP, "v1", PLURAL)["items"] if i["metadata"]["namespace"] == ns))
    step("co patch merge", lambda: custom.patch_namespaced_custom_object(GROUP, "v1", ns, PLURAL, "g2", {"spec": {"color": None, "replicas": 3}})["spec"])
    step("co patch json list", lambda: custom.patch_namespaced_custom_object(GROUP, "v1", ns, PLURAL, "g2", [{"op": "replace", "path": "/spec/replicas", "value": 4}])["spec"])
    step("co patch status", lambda: (lambda o: (o["spec"], o.get("status")))(custom.patch_namespaced_custom_object_status(GROUP, "v1", ns, PLURAL, "g2", {"status": {"replicas": 1, "selector": "g=g2"}, "spec": {"replicas": 9}})))
    step("co get status", lambda: (lambda o: (o["spec"], o.get("status")))(custom.get_namespaced_custom_object_status(GROUP, "v1", ns, PLURAL, "g2")))
    step("co get scale", lambda: (lambda s: (s["kind"], s["apiVersion"], s["spec"], s["status"], s["metadata"]["name"]))(custom.get_namespaced_custom_object_scale(GROUP, "v1", ns, PLURAL, "g2")))
    step("co patch scale", lambda: (lambda s: (s["kind"], s["spec"], s["status"]))(custom.patch_namespaced_custom_object_scale(GROUP, "v1", ns, PLURAL, "g2", {"spec": {"replicas": 5}})))
    step("co after scale", lambda: custom.get_namespaced_custom_object(GROUP, "v1", ns, PLURAL, "g2")["spec"])
    step("co replace scale", lambda: (lambda s: (s["kind"], s["spec"]))(custom.replace_namespaced_custom_object_scale(GROUP, "v1", ns, PLURAL, "g2", {"apiVersion": "autoscaling/v1", "kind": "Scale", "metadata": {"name": "g2", "namespace": ns}, "spec": {"replicas": 6}})))
    step("co replace scale bad", lambda: custom.replace_namespaced_custom_object_scale(GROUP, "v1", ns, PLURAL, "g2", {"apiVersion": "autoscaling/v1", "kind": "Scale", "metadata": {"name": "g2"}, "spec": {"replicas": -1}}))
    step("co scale missing", lambda: custom.get_namespaced_custom_object_scale(GROUP, "v1", ns, PLURAL, "nope"))
    step("co delete body", lambda: (lambda r: (r.get("kind"), r.get("status"), (r.get("details") or {}).get("name")))(custom.delete_namespaced_custom_object(GROUP, "v1", ns, PLURAL, "g1", body=client.V1DeleteOptions(propagation_policy="Foreground"))))
    step("co delete grace", lambda: custom.delete_namespaced_custom_object(GROUP, "v1", ns, PLURAL, "nope", grace_period_seconds=0))
    step("co watch", lambda: (lambda rv: [(ev["type"], ev["object"]["metadata"]["name"]) for ev in watch.Watch().stream(custom.list_namespaced_custom_object, GROUP, "v1", ns, PLURAL, resource_version=rv, timeout_seconds=1)])(
        custom.list_namespaced_custom_object(GROUP, "v1", ns, PLURAL)["metadata"]["resourceVersion"]))
    gdyn, gres = resolve(GROUP + "/v1", "Gizmo")
    step("dyn gizmo", lambda: (lambda r: (r.kind, r.short_names, r.categories, sorted(r.subresources)))(gres))
    step("dyn gizmo ssa", lambda: (lambda o: (o.spec.replicas, sorted((f.manager, f.operation) for f in o.metadata.managedFields)))(gdyn.server_side_apply(gres, body=json.dumps(gz("g4", replicas=1)), name="g4", namespace=ns, field_manager="py", force_conflicts=True)))
    step("dyn gizmo strategic", lambda: gdyn.patch(gres, body={"spec": {"replicas": 2}}, name="g4", namespace=ns))
    step("co delete collection", lambda: (lambda r: (r.get("kind"), sorted(i["metadata"]["name"] for i in r.get("items") or [])))(
        custom.delete_collection_namespaced_custom_object(GROUP, "v1", ns, PLURAL, label_selector="g=g4")))
    step("co delete collection body", lambda: (lambda r: (r.get("kind"), sorted(i["metadata"]["name"] for i in r.get("items") or [])))(
        custom.delete_collection_namespaced_custom_object(GROUP, "v1", ns, PLURAL, body=client.V1DeleteOptions(propagation_policy="Orphan"), dry_run="All")))
    # An old resourceVersion, once etcd is compacted: 410 Expired, which a
    # watch sends as an ERROR event and Watch.stream raises (at once with
    # timeoutSeconds; after one retry from the same resourceVersion
    # without).
    step("compact", compact)

    def error_events():
        r = custom.list_namespaced_custom_object(GROUP, "v1", ns, PLURAL, resource_version="1", watch=True,
                                                 timeout_seconds=5, _preload_content=False)
        return r.status, r.headers.get("Content-Type"), [
            (e["type"], e["object"].get("kind"), e["object"].get("status"), e["object"].get("reason"),
             e["object"].get("code"), norm(e["object"].get("message")))
            for e in map(json.loads, r.data.decode().splitlines())]
    step("co watch old rv, raw", error_events)
    step("co watch old rv, timeoutSeconds", lambda: list(watch.Watch().stream(
        custom.list_namespaced_custom_object, GROUP, "v1", ns, PLURAL, resource_version="1", timeout_seconds=5)))
    step("co watch old rv, retried", lambda: list(watch.Watch().stream(
        custom.list_namespaced_custom_object, GROUP, "v1", ns, PLURAL, resource_version="1", _request_timeout=10)))
    step("co list old rv exact", lambda: custom.list_namespaced_custom_object(
        GROUP, "v1", ns, PLURAL, resource_version="1", resource_version_match="Exact"))
    step("more: delete gizmos crd", lambda: delete_then(
        lambda: ext.delete_custom_resource_definition(PLURAL + "." + GROUP), lambda: "deleted"))
    step("more: delete namespace", lambda: delete_then(
        lambda: core.delete_namespace(ns), lambda: core.read_namespace(ns).status.phase))


extended(ns + "-more")

step("delete crd", lambda: delete_then(
    lambda: ext.delete_custom_resource_definition(PLURAL + "." + GROUP),
    lambda: "deleted"))
step("delete namespace", lambda: delete_then(
    lambda: core.delete_namespace(ns), lambda: core.read_namespace(ns).status.phase))

"""The Kubernetes Python client against one API server: the same calls
against kube-apiserver and serve print the same lines.

    python3 python_client.py KUBECONFIG NAMESPACE DISCOVERY_CACHE_FILE

Every step prints one line: what the call returned, reduced to what a
program reads (names, data, codes, reasons, messages, causes), or the
ApiException it raised with the Status the server sent. Numbers of four
digits or more (resourceVersions) are replaced by N. Nothing printed
depends on time.
"""

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
    return re.sub(r"\d{4,}", "N", str(s))


def step(name, fn):
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
        out = "ApiException %s %s | %s | %s | %s" % (
            e.status, norm(e.reason), st.get("reason"), norm(st.get("message")), causes)
    print("%s: %s" % (name, out), flush=True)


def cm(name, labels, data):
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
step("delete crd", lambda: delete_then(
    lambda: ext.delete_custom_resource_definition(PLURAL + "." + GROUP),
    lambda: "deleted"))
step("delete namespace", lambda: delete_then(
    lambda: core.delete_namespace(ns), lambda: core.read_namespace(ns).status.phase))

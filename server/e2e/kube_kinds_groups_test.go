package e2e

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"math/big"
	"strings"
	"testing"
	"time"
)

// kindStep is one kubectl invocation of TestKubeKindsKubectlSameAsOurs.
type kindStep = struct {
	stdin string
	args  []string
}

// noValidate turns kubectl's client-side validation off for a step (our
// OpenAPI document has no schema for Binding).
func noValidate(s kindStep) kindStep {
	s.args = append(s.args, "--validate=false")
	return s
}

// groupKindSteps are the steps for the kinds of the other built-in groups
// (server/kinds_groups.go), bindings and componentstatuses: valid and
// invalid objects, wide tables. Cluster-scoped names start with ns, so
// that the storage keys are compared too. Where kube's controllers inside
// kube-apiserver write status (FlowSchemas' Dangling condition,
// APIServices' availability) or the table is the aggregator's own, only
// the create is compared, or columns that do not depend on it.
func groupKindSteps(t *testing.T, ns string) []kindStep {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "u"}}, k)
	if err != nil {
		t.Fatal(err)
	}
	csr := base64.StdEncoding.EncodeToString(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}))
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "ca"}, NotBefore: time.Now(),
		NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	certDER, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	ca := strings.ReplaceAll(string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: certDER})), "\n", "\n    ")
	y := func(apiVersion, kind, name, body string) kindStep {
		return kindStep{"apiVersion: " + apiVersion + "\nkind: " + kind + "\nmetadata:\n  name: " + name + "\n" + body, []string{"create", "-f", "-"}}
	}
	get := func(args ...string) kindStep { return kindStep{"", append([]string{"get"}, args...)} }
	claim := "      devices:\n        requests:\n        - name: %s\n          exactly: {deviceClassName: c}\n"
	return []kindStep{
		// autoscaling: v2 stored, v1 converted.
		y("autoscaling/v2", "HorizontalPodAutoscaler", "hpa", "spec:\n  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}\n  maxReplicas: 4\n  metrics:\n  - type: Resource\n    resource: {name: cpu, target: {type: Utilization, averageUtilization: 60}}\n"),
		y("autoscaling/v1", "HorizontalPodAutoscaler", "hpa1", "spec:\n  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}\n  maxReplicas: 3\n  targetCPUUtilizationPercentage: 70\n"),
		y("autoscaling/v2", "HorizontalPodAutoscaler", "badhpa", "spec:\n  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}\n  maxReplicas: 0\n"),
		get("hpa", "-o", "wide"),
		get("horizontalpodautoscalers.v1.autoscaling", "-o", "wide"),
		get("horizontalpodautoscalers.v1.autoscaling", "hpa", "-o", "jsonpath={.apiVersion} {.spec.targetCPUUtilizationPercentage} {.metadata.annotations}"),
		// events.k8s.io/v1, stored as core v1 Events.
		y("events.k8s.io/v1", "Event", "ev1", "eventTime: 2026-01-02T03:04:05.000000Z\nreportingController: example.com/c\nreportingInstance: i\naction: Act\nreason: Why\ntype: Normal\nnote: hello\nregarding: {kind: Pod, name: p, namespace: "+ns+"}\n"),
		y("events.k8s.io/v1", "Event", "badev", "reason: Why\ntype: Normal\n"),
		get("events.v1.events.k8s.io", "-o", "jsonpath={.items[*].note} {.items[*].regarding.name}"),
		get("events.v1", "-o", "jsonpath={.items[*].message} {.items[*].involvedObject.name}"),
		// certificates.k8s.io
		y("certificates.k8s.io/v1", "CertificateSigningRequest", ns+"-csr", "spec:\n  request: "+csr+"\n  signerName: example.com/signer\n  usages: [digital signature]\n"),
		y("certificates.k8s.io/v1", "CertificateSigningRequest", ns+"-badcsr", "spec:\n  request: \"\"\n  signerName: example.com/signer\n"),
		get("csr", ns+"-csr", "-o", "custom-columns=NAME:.metadata.name,SIGNER:.spec.signerName,USAGES:.spec.usages"),
		y("certificates.k8s.io/v1", "ClusterTrustBundle", ns+"-ctb", "spec:\n  trustBundle: |\n    "+ca+"\n"),
		y("certificates.k8s.io/v1", "ClusterTrustBundle", ns+"-badctb", "spec:\n  trustBundle: nope\n"),
		get("clustertrustbundles", ns+"-ctb", "-o", "wide"),
		y("certificates.k8s.io/v1", "PodCertificateRequest", "badpcr", "spec:\n  signerName: example.com/s\n"),
		// flowcontrol
		y("flowcontrol.apiserver.k8s.io/v1", "PriorityLevelConfiguration", ns+"-plc", "spec:\n  type: Limited\n  limited:\n    nominalConcurrencyShares: 5\n    limitResponse: {type: Reject}\n"),
		y("flowcontrol.apiserver.k8s.io/v1", "PriorityLevelConfiguration", ns+"-badplc", "spec:\n  type: Bogus\n"),
		get("prioritylevelconfigurations", ns+"-plc", "-o", "wide"),
		y("flowcontrol.apiserver.k8s.io/v1", "FlowSchema", ns+"-fs", "spec:\n  priorityLevelConfiguration: {name: "+ns+"-plc}\n  matchingPrecedence: 500\n"),
		y("flowcontrol.apiserver.k8s.io/v1", "FlowSchema", ns+"-badfs", "spec:\n  priorityLevelConfiguration: {name: x}\n  matchingPrecedence: 20000\n"),
		get("flowschemas", ns+"-fs", "-o", "custom-columns=NAME:.metadata.name,PL:.spec.priorityLevelConfiguration.name,PREC:.spec.matchingPrecedence"),
		// kube's mandatory and suggested objects, created at start.
		get("flowschemas", "-o", "custom-columns=NAME:.metadata.name,PL:.spec.priorityLevelConfiguration.name,PREC:.spec.matchingPrecedence,AUTO:.metadata.annotations"),
		get("prioritylevelconfigurations", "-o", "wide"),
		// node.k8s.io
		y("node.k8s.io/v1", "RuntimeClass", ns+"-rc", "handler: runc\n"),
		y("node.k8s.io/v1", "RuntimeClass", ns+"-badrc", "handler: \"\"\n"),
		get("runtimeclasses", ns+"-rc", "-o", "wide"),
		// resource.k8s.io
		y("resource.k8s.io/v1", "DeviceClass", ns+"-dc", "spec: {}\n"),
		y("resource.k8s.io/v1", "DeviceTaintRule", ns+"-dtr", "spec:\n  taint: {key: example.com/k, effect: NoSchedule}\n"),
		y("resource.k8s.io/v1", "DeviceTaintRule", ns+"-baddtr", "spec:\n  taint: {key: example.com/k, effect: Bogus}\n"),
		y("resource.k8s.io/v1", "ResourceSlice", ns+"-slice", "spec:\n  driver: example.com\n  allNodes: true\n  pool: {name: p, resourceSliceCount: 1, generation: 0}\n"),
		y("resource.k8s.io/v1", "ResourceSlice", ns+"-badslice", "spec:\n  driver: \"\"\n  allNodes: true\n  pool: {name: p, resourceSliceCount: 1, generation: 0}\n"),
		y("resource.k8s.io/v1", "ResourceClaim", "claim", "spec:\n"+strings.ReplaceAll(strings.Replace(claim, "%s", "r", 1), "      ", "  ")),
		y("resource.k8s.io/v1", "ResourceClaim", "badclaim", "spec:\n"+strings.ReplaceAll(strings.Replace(claim, "%s", "\"\"", 1), "      ", "  ")),
		y("resource.k8s.io/v1", "ResourceClaimTemplate", "tmpl", "spec:\n  spec:\n"+strings.ReplaceAll(strings.Replace(claim, "%s", "r", 1), "      ", "    ")),
		get("deviceclasses", ns+"-dc", "-o", "wide"),
		get("devicetaintrules", ns+"-dtr", "-o", "wide"),
		get("resourceslices", ns+"-slice", "-o", "wide"),
		get("resourceclaims,resourceclaimtemplates", "-o", "wide"),
		// storage.k8s.io
		y("storage.k8s.io/v1", "StorageClass", ns+"-sc", "provisioner: example.com/p\n"),
		y("storage.k8s.io/v1", "StorageClass", ns+"-badsc", "provisioner: \"\"\n"),
		y("storage.k8s.io/v1", "CSIDriver", ns+".example.com", "spec: {}\n"),
		y("storage.k8s.io/v1", "CSINode", ns+"-node", "spec:\n  drivers: [{name: example.com, nodeID: n}]\n"),
		y("storage.k8s.io/v1", "CSINode", ns+"-badnode", "spec:\n  drivers: [{name: \"\", nodeID: n}]\n"),
		y("storage.k8s.io/v1", "VolumeAttachment", ns+"-va", "spec:\n  attacher: example.com\n  nodeName: n\n  source: {persistentVolumeName: pv}\n"),
		y("storage.k8s.io/v1", "VolumeAttributesClass", ns+"-vac", "driverName: example.com\nparameters: {iops: \"100\"}\n"),
		y("storage.k8s.io/v1", "VolumeAttributesClass", ns+"-badvac", "driverName: example.com\n"),
		y("storage.k8s.io/v1", "CSIStorageCapacity", "cap", "storageClassName: sc\n"),
		y("storage.k8s.io/v1", "CSIStorageCapacity", "badcap", "storageClassName: \"\"\n"),
		get("storageclasses", ns+"-sc", "-o", "wide"),
		get("csidrivers", ns+".example.com", "-o", "wide"),
		get("csinodes", ns+"-node", "-o", "wide"),
		get("volumeattachments", ns+"-va", "-o", "wide"),
		get("volumeattributesclasses", ns+"-vac", "-o", "wide"),
		get("csistoragecapacities", "-o", "wide"),
		// storagemigration.k8s.io (its controller is kube-controller-manager's)
		y("storagemigration.k8s.io/v1", "StorageVersionMigration", ns+"-svm", "spec:\n  resource: {group: apps, resource: deployments}\n"),
		y("storagemigration.k8s.io/v1", "StorageVersionMigration", ns+"-badsvm", "spec:\n  resource: {group: apps, resource: \"\"}\n"),
		get("storageversionmigrations", ns+"-svm", "-o", "wide"),
		// networking.k8s.io's newer kinds
		y("networking.k8s.io/v1", "ServiceCIDR", ns+"-cidr", "spec:\n  cidrs: [10.250.0.0/24]\n"),
		y("networking.k8s.io/v1", "ServiceCIDR", ns+"-badcidr", "spec:\n  cidrs: [bogus]\n"),
		y("networking.k8s.io/v1", "IPAddress", "not-an-ip", "spec:\n  parentRef: {resource: services, name: s, namespace: "+ns+"}\n"),
		// apiregistration.k8s.io (kube's aggregator owns status and table)
		y("apiregistration.k8s.io/v1", "APIService", "v1."+ns+".example.com", "spec:\n  group: "+ns+".example.com\n  version: v1\n  groupPriorityMinimum: 100\n  versionPriority: 100\n"),
		y("apiregistration.k8s.io/v1", "APIService", ns+"-wrong", "spec:\n  group: "+ns+".example.com\n  version: v1\n  groupPriorityMinimum: 100\n  versionPriority: 100\n"),
		// bindings and componentstatuses
		{"apiVersion: v1\nkind: Pod\nmetadata:\n  name: bindme\nspec:\n  containers:\n  - {name: c, image: nginx}\n", []string{"create", "-f", "-"}},
		noValidate(y("v1", "Binding", "bindme", "target: {apiVersion: v1, kind: Node, name: n1}\n")),
		noValidate(y("v1", "Binding", "bindme", "target: {apiVersion: v1, kind: Node, name: n2}\n")),
		get("pod", "bindme", "-o", "custom-columns=NAME:.metadata.name,NODE:.spec.nodeName,SCHEDULED:.status.conditions[0].status"),
		get("componentstatuses", "etcd-0"),
		get("componentstatuses", "etcd-0", "-o", "wide"),
	}
}

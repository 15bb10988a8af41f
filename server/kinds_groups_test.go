package server

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

// groupKind is one kind of kinds_groups.go: where it is served, a valid
// object and an invalid one (kube's 422 from its strategy's validation).
type groupKind struct {
	path           string // collection path
	valid, invalid map[string]any
	invalidField   string // a field among the 422's causes
	key            string // kube's etcd key of the valid object
}

func obj(apiVersion, kind, name string, fields map[string]any) map[string]any {
	o := map[string]any{"apiVersion": apiVersion, "kind": kind, "metadata": map[string]any{"name": name}}
	for k, v := range fields {
		o[k] = v
	}
	return o
}

func testCSRRequest(t *testing.T) string {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "u"}}, k)
	if err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}))
}

func testCACert(t *testing.T) string {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "ca"},
		NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
}

func groupKinds(t *testing.T) []groupKind {
	claimSpec := func(name string) map[string]any {
		return map[string]any{"devices": map[string]any{"requests": []any{
			map[string]any{"name": name, "exactly": map[string]any{"deviceClassName": "c"}}}}}
	}
	return []groupKind{
		{
			path: "/apis/autoscaling/v2/namespaces/default/horizontalpodautoscalers",
			valid: obj("autoscaling/v2", "HorizontalPodAutoscaler", "h", map[string]any{"spec": map[string]any{
				"scaleTargetRef": map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "name": "d"}, "maxReplicas": 3}}),
			invalid: obj("autoscaling/v2", "HorizontalPodAutoscaler", "h2", map[string]any{"spec": map[string]any{
				"scaleTargetRef": map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "name": "d"}, "maxReplicas": 0}}),
			invalidField: "spec.maxReplicas",
			key:          "/registry/horizontalpodautoscalers/default/h",
		},
		{
			path: "/apis/certificates.k8s.io/v1/certificatesigningrequests",
			valid: obj("certificates.k8s.io/v1", "CertificateSigningRequest", "csr", map[string]any{"spec": map[string]any{
				"request": testCSRRequest(t), "signerName": "example.com/signer", "usages": []any{"digital signature"}}}),
			invalid: obj("certificates.k8s.io/v1", "CertificateSigningRequest", "csr2", map[string]any{"spec": map[string]any{
				"request": "", "signerName": "example.com/signer"}}),
			invalidField: "spec.request",
			key:          "/registry/certificatesigningrequests/csr",
		},
		{
			path: "/apis/certificates.k8s.io/v1/clustertrustbundles",
			valid: obj("certificates.k8s.io/v1", "ClusterTrustBundle", "ctb", map[string]any{"spec": map[string]any{
				"trustBundle": testCACert(t)}}),
			invalid: obj("certificates.k8s.io/v1", "ClusterTrustBundle", "ctb2", map[string]any{"spec": map[string]any{
				"trustBundle": "not pem"}}),
			invalidField: "spec.trustBundle",
			key:          "/registry/clustertrustbundles/ctb",
		},
		{
			path: "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas",
			valid: obj("flowcontrol.apiserver.k8s.io/v1", "FlowSchema", "fs", map[string]any{"spec": map[string]any{
				"priorityLevelConfiguration": map[string]any{"name": "p"}}}),
			invalid: obj("flowcontrol.apiserver.k8s.io/v1", "FlowSchema", "fs2", map[string]any{"spec": map[string]any{
				"priorityLevelConfiguration": map[string]any{"name": "p"}, "matchingPrecedence": 20000}}),
			invalidField: "spec.matchingPrecedence",
			key:          "/registry/flowschemas/fs",
		},
		{
			path: "/apis/flowcontrol.apiserver.k8s.io/v1/prioritylevelconfigurations",
			valid: obj("flowcontrol.apiserver.k8s.io/v1", "PriorityLevelConfiguration", "plc", map[string]any{"spec": map[string]any{
				"type": "Limited", "limited": map[string]any{"nominalConcurrencyShares": 5, "limitResponse": map[string]any{"type": "Reject"}}}}),
			invalid: obj("flowcontrol.apiserver.k8s.io/v1", "PriorityLevelConfiguration", "plc2", map[string]any{"spec": map[string]any{
				"type": "Bogus"}}),
			invalidField: "spec.type",
			key:          "/registry/prioritylevelconfigurations/plc",
		},
		{
			path:         "/apis/node.k8s.io/v1/runtimeclasses",
			valid:        obj("node.k8s.io/v1", "RuntimeClass", "rc", map[string]any{"handler": "runc"}),
			invalid:      obj("node.k8s.io/v1", "RuntimeClass", "rc2", map[string]any{"handler": ""}),
			invalidField: "handler",
			key:          "/registry/runtimeclasses/rc",
		},
		{
			path:         "/apis/resource.k8s.io/v1/deviceclasses",
			valid:        obj("resource.k8s.io/v1", "DeviceClass", "dc", map[string]any{"spec": map[string]any{}}),
			invalid:      obj("resource.k8s.io/v1", "DeviceClass", "Bad_Name", map[string]any{"spec": map[string]any{}}),
			invalidField: "metadata.name",
			key:          "/registry/deviceclasses/dc",
		},
		{
			path: "/apis/resource.k8s.io/v1/devicetaintrules",
			valid: obj("resource.k8s.io/v1", "DeviceTaintRule", "dtr", map[string]any{"spec": map[string]any{
				"taint": map[string]any{"key": "example.com/k", "effect": "NoSchedule"}}}),
			invalid: obj("resource.k8s.io/v1", "DeviceTaintRule", "dtr2", map[string]any{"spec": map[string]any{
				"taint": map[string]any{"key": "example.com/k", "effect": "Bogus"}}}),
			invalidField: "spec.taint.effect",
			key:          "/registry/devicetaintrules/dtr",
		},
		{
			path:         "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims",
			valid:        obj("resource.k8s.io/v1", "ResourceClaim", "claim", map[string]any{"spec": claimSpec("r")}),
			invalid:      obj("resource.k8s.io/v1", "ResourceClaim", "claim2", map[string]any{"spec": claimSpec("")}),
			invalidField: "spec.devices.requests[0].name",
			key:          "/registry/resourceclaims/default/claim",
		},
		{
			path: "/apis/resource.k8s.io/v1/namespaces/default/resourceclaimtemplates",
			valid: obj("resource.k8s.io/v1", "ResourceClaimTemplate", "tmpl", map[string]any{"spec": map[string]any{
				"spec": claimSpec("r")}}),
			invalid: obj("resource.k8s.io/v1", "ResourceClaimTemplate", "tmpl2", map[string]any{"spec": map[string]any{
				"spec": claimSpec("")}}),
			invalidField: "spec.spec.devices.requests[0].name",
			key:          "/registry/resourceclaimtemplates/default/tmpl",
		},
		{
			path: "/apis/resource.k8s.io/v1/resourceslices",
			valid: obj("resource.k8s.io/v1", "ResourceSlice", "slice", map[string]any{"spec": map[string]any{
				"driver": "example.com", "allNodes": true,
				"pool": map[string]any{"name": "p", "resourceSliceCount": 1, "generation": 0}}}),
			invalid: obj("resource.k8s.io/v1", "ResourceSlice", "slice2", map[string]any{"spec": map[string]any{
				"driver": "", "allNodes": true,
				"pool": map[string]any{"name": "p", "resourceSliceCount": 1, "generation": 0}}}),
			invalidField: "spec.driver",
			key:          "/registry/resourceslices/slice",
		},
		{
			path:         "/apis/storage.k8s.io/v1/csidrivers",
			valid:        obj("storage.k8s.io/v1", "CSIDriver", "example.com", map[string]any{"spec": map[string]any{}}),
			invalid:      obj("storage.k8s.io/v1", "CSIDriver", "Bad_Name", map[string]any{"spec": map[string]any{}}),
			invalidField: "metadata.name",
			key:          "/registry/csidrivers/example.com",
		},
		{
			path:  "/apis/storage.k8s.io/v1/csinodes",
			valid: obj("storage.k8s.io/v1", "CSINode", "n1", map[string]any{"spec": map[string]any{"drivers": []any{}}}),
			invalid: obj("storage.k8s.io/v1", "CSINode", "n2", map[string]any{"spec": map[string]any{"drivers": []any{
				map[string]any{"name": "", "nodeID": "x"}}}}),
			invalidField: "spec.drivers[0].name",
			key:          "/registry/csinodes/n1",
		},
		{
			path:         "/apis/storage.k8s.io/v1/namespaces/default/csistoragecapacities",
			valid:        obj("storage.k8s.io/v1", "CSIStorageCapacity", "cap", map[string]any{"storageClassName": "sc"}),
			invalid:      obj("storage.k8s.io/v1", "CSIStorageCapacity", "cap2", map[string]any{"storageClassName": ""}),
			invalidField: "storageClassName",
			key:          "/registry/csistoragecapacities/default/cap",
		},
		{
			path:         "/apis/storage.k8s.io/v1/storageclasses",
			valid:        obj("storage.k8s.io/v1", "StorageClass", "sc", map[string]any{"provisioner": "example.com/p"}),
			invalid:      obj("storage.k8s.io/v1", "StorageClass", "sc2", map[string]any{"provisioner": ""}),
			invalidField: "provisioner",
			key:          "/registry/storageclasses/sc",
		},
		{
			path: "/apis/storage.k8s.io/v1/volumeattachments",
			valid: obj("storage.k8s.io/v1", "VolumeAttachment", "va", map[string]any{"spec": map[string]any{
				"attacher": "example.com", "nodeName": "n", "source": map[string]any{"persistentVolumeName": "pv"}}}),
			invalid: obj("storage.k8s.io/v1", "VolumeAttachment", "va2", map[string]any{"spec": map[string]any{
				"attacher": "", "nodeName": "n", "source": map[string]any{"persistentVolumeName": "pv"}}}),
			invalidField: "spec.attacher",
			key:          "/registry/volumeattachments/va",
		},
		{
			path: "/apis/storage.k8s.io/v1/volumeattributesclasses",
			valid: obj("storage.k8s.io/v1", "VolumeAttributesClass", "vac", map[string]any{"driverName": "example.com",
				"parameters": map[string]any{"iops": "100"}}),
			invalid:      obj("storage.k8s.io/v1", "VolumeAttributesClass", "vac2", map[string]any{"driverName": ""}),
			invalidField: "driverName",
			key:          "/registry/volumeattributesclasses/vac",
		},
		{
			path: "/apis/storagemigration.k8s.io/v1/storageversionmigrations",
			valid: obj("storagemigration.k8s.io/v1", "StorageVersionMigration", "svm", map[string]any{"spec": map[string]any{
				"resource": map[string]any{"group": "apps", "resource": "deployments"}}}),
			invalid: obj("storagemigration.k8s.io/v1", "StorageVersionMigration", "svm2", map[string]any{"spec": map[string]any{
				"resource": map[string]any{"group": "apps", "resource": ""}}}),
			invalidField: "spec.resource.resource",
			key:          "/registry/storageversionmigrations/svm",
		},
		{
			path: "/apis/networking.k8s.io/v1/ipaddresses",
			valid: obj("networking.k8s.io/v1", "IPAddress", "10.0.0.1", map[string]any{"spec": map[string]any{
				"parentRef": map[string]any{"resource": "services", "name": "s", "namespace": "default"}}}),
			invalid: obj("networking.k8s.io/v1", "IPAddress", "not-an-ip", map[string]any{"spec": map[string]any{
				"parentRef": map[string]any{"resource": "services", "name": "s", "namespace": "default"}}}),
			invalidField: "metadata.name",
			key:          "/registry/ipaddresses/10.0.0.1",
		},
		{
			path:         "/apis/networking.k8s.io/v1/servicecidrs",
			valid:        obj("networking.k8s.io/v1", "ServiceCIDR", "cidr", map[string]any{"spec": map[string]any{"cidrs": []any{"10.0.0.0/24"}}}),
			invalid:      obj("networking.k8s.io/v1", "ServiceCIDR", "cidr2", map[string]any{"spec": map[string]any{"cidrs": []any{"bogus"}}}),
			invalidField: "spec.cidrs[0]",
			key:          "/registry/servicecidrs/cidr",
		},
		{
			path: "/apis/apiregistration.k8s.io/v1/apiservices",
			valid: obj("apiregistration.k8s.io/v1", "APIService", "v1.example.com", map[string]any{"spec": map[string]any{
				"group": "example.com", "version": "v1", "groupPriorityMinimum": 100, "versionPriority": 100}}),
			invalid: obj("apiregistration.k8s.io/v1", "APIService", "wrong", map[string]any{"spec": map[string]any{
				"group": "example.com", "version": "v1", "groupPriorityMinimum": 100, "versionPriority": 100}}),
			invalidField: "metadata.name",
			key:          "/registry/apiregistration.k8s.io/apiservices/v1.example.com",
		},
	}
}

// TestGroupKinds: each kind kinds_groups.go adds takes a valid object at
// kube's storage key, refuses an invalid one with kube's 422 naming the
// field, and is served as a Table by kube's printer and in protobuf.
func TestGroupKinds(t *testing.T) {
	e := newEnv(t)
	for _, k := range groupKinds(t) {
		name := path(k.valid, "metadata", "name").(string)
		t.Run(k.path[strings.LastIndex(k.path, "/")+1:], func(t *testing.T) {
			e.t = t
			e.must(201, "POST", k.path, k.valid)
			if _, err := e.store.Get(t.Context(), k.key); err != nil {
				t.Errorf("stored at %s: %v", k.key, err)
			}
			st := e.expectStatus(422, "Invalid", "", "POST", k.path, k.invalid)
			if f := causeFields(st); !containsString(f, k.invalidField) {
				t.Errorf("422 causes %v, want %s: %v", f, k.invalidField, st)
			}
			tbl := e.must(200, "GET", k.path+"/"+name, nil, "Accept", tableAccept)
			if rows, _ := tbl["rows"].([]any); len(rows) != 1 {
				t.Errorf("table: %v", tbl)
			}
			r := e.do("GET", k.path+"/"+name, nil, "Accept", contentProtobuf)
			if r.code != 200 || r.hdr.Get("Content-Type") != contentProtobuf {
				t.Errorf("protobuf GET: %d %s", r.code, r.hdr.Get("Content-Type"))
			}
		})
	}
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// TestCSRApproval: a CertificateSigningRequest's Approved condition is
// set through /approval only, as kube's approval strategy rules: the main
// resource and /status keep the stored conditions.
func TestCSRApproval(t *testing.T) {
	e := newEnv(t)
	const p = "/apis/certificates.k8s.io/v1/certificatesigningrequests"
	csr := obj("certificates.k8s.io/v1", "CertificateSigningRequest", "csr", map[string]any{"spec": map[string]any{
		"request": testCSRRequest(t), "signerName": "example.com/signer", "usages": []any{"digital signature"}}})
	e.must(201, "POST", p, csr)
	approve := `{"status":{"conditions":[{"type":"Approved","status":"True","reason":"R","message":"m"}]}}`
	got := e.must(200, "PATCH", p+"/csr", approve, "Content-Type", jsonMerge)
	if c := path(got, "status", "conditions"); c != nil {
		t.Fatalf("main resource set conditions: %v", c)
	}
	got = e.must(200, "PATCH", p+"/csr/approval", approve, "Content-Type", jsonMerge)
	conds, _ := path(got, "status", "conditions").([]any)
	if len(conds) != 1 || conds[0].(map[string]any)["type"] != "Approved" {
		t.Fatalf("approval: %v", got["status"])
	}
	e.must(200, "GET", p+"/csr/approval", nil)
	e.expectStatus(404, "NotFound", "", "GET", p+"/csr/bogus", nil)
	// kube's 422 for approving and denying at once.
	e.expectStatus(422, "Invalid", "", "PATCH", p+"/csr/approval",
		`{"status":{"conditions":[{"type":"Approved","status":"True"},{"type":"Denied","status":"True"}]}}`,
		"Content-Type", jsonMerge)
	// The signer's field selector.
	list := e.must(200, "GET", p+"?fieldSelector=spec.signerName%3Dexample.com%2Fsigner", nil)
	if items, _ := list["items"].([]any); len(items) != 1 {
		t.Fatalf("fieldSelector spec.signerName: %v", list)
	}
	list = e.must(200, "GET", p+"?fieldSelector=spec.signerName%3Dother", nil)
	if items, _ := list["items"].([]any); len(items) != 0 {
		t.Fatalf("fieldSelector spec.signerName=other: %v", list)
	}
}

// TestFlowControlBootstrap: kube's mandatory and suggested FlowSchemas and
// PriorityLevelConfigurations exist once the server is up, with kube's
// auto-update annotation, and an edited one is not overwritten by a
// restart's bootstrap.
func TestFlowControlBootstrap(t *testing.T) {
	e := newEnv(t)
	const fs = "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas"
	const pl = "/apis/flowcontrol.apiserver.k8s.io/v1/prioritylevelconfigurations"
	for _, p := range []string{fs + "/exempt", fs + "/catch-all", fs + "/system-leader-election", pl + "/exempt", pl + "/catch-all", pl + "/workload-low"} {
		o := e.must(200, "GET", p, nil)
		if path(o, "metadata", "annotations", "apf.kubernetes.io/autoupdate-spec") != "true" {
			t.Errorf("%s: %v", p, o["metadata"])
		}
	}
	e.must(200, "PATCH", pl+"/workload-low", `{"metadata":{"labels":{"edited":"yes"}}}`, "Content-Type", jsonMerge)
	if err := e.srv.bootstrapFlowControl(t.Context()); err != nil {
		t.Fatal(err)
	}
	if o := e.must(200, "GET", pl+"/workload-low", nil); path(o, "metadata", "labels", "edited") != "yes" {
		t.Fatalf("bootstrap overwrote: %v", o["metadata"])
	}
}

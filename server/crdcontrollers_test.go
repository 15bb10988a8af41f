package server

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"
)

// crdStatusView is a CRD's status and managedFields (their times and the
// conditions' masked, the entries sorted), as kube-apiserver v1.37.2 shows them.
func crdStatusView(t *testing.T, m map[string]any) string {
	t.Helper()
	md, _ := m["metadata"].(map[string]any)
	mfs, _ := md["managedFields"].([]any)
	var entries []string
	for _, e := range mfs {
		e := e.(map[string]any)
		fields, _ := json.Marshal(e["fieldsV1"])
		entries = append(entries, fmt.Sprintf("%v/%v/%v/%v %s", e["manager"], e["operation"], e["subresource"], e["apiVersion"], fields))
	}
	st, _ := m["status"].(map[string]any)
	if conds, ok := st["conditions"].([]any); ok {
		for _, c := range conds {
			if c, ok := c.(map[string]any); ok && c["lastTransitionTime"] != nil {
				c["lastTransitionTime"] = "T"
			}
		}
	}
	b, _ := json.Marshal(st)
	// A set: kube's field manager orders one operation's entries by
	// their times in seconds, then by manager.
	sort.Strings(entries)
	return string(b) + "\n" + strings.Join(entries, "\n")
}

const (
	clientEntry       = `client/Update/<nil>/apiextensions.k8s.io/v1 {"f:spec":{"f:conversion":{".":{},"f:strategy":{}},"f:group":{},"f:names":{"f:kind":{},"f:listKind":{},"f:plural":{},"f:singular":{}},"f:scope":{},"f:versions":{}}}`
	controllerEntry   = `kube-apiserver/Update/status/apiextensions.k8s.io/v1 {"f:status":{"f:acceptedNames":{"f:kind":{},"f:listKind":{},"f:plural":{},"f:singular":{}},"f:conditions":{"k:{\"type\":\"Established\"}":{".":{},"f:lastTransitionTime":{},"f:message":{},"f:reason":{},"f:status":{},"f:type":{}},"k:{\"type\":\"NamesAccepted\"}":{".":{},"f:lastTransitionTime":{},"f:message":{},"f:reason":{},"f:status":{},"f:type":{}}}}}`
	establishedStatus = `{"acceptedNames":{"kind":"Probe","listKind":"ProbeList","plural":"probes","singular":"probe"},"conditions":[` +
		`{"lastTransitionTime":"T","message":"no conflicts found","reason":"NoConflicts","status":"True","type":"NamesAccepted"},` +
		`{"lastTransitionTime":"T","message":"the initial names have been accepted","reason":"InitialNamesAccepted","status":"True","type":"Established"}],"storedVersions":["v1"]}`
)

// TestCRDStatusByControllers: a CRD's accepted names and conditions are
// written as kube-apiserver's naming and establishing controllers write
// them, by status updates after the client's write, recorded in
// managedFields for "kube-apiserver" (Update, subresource status): the
// create's answer has the status kube's strategy leaves, a watcher sees
// ADDED then the two controllers' MODIFIED events, a GET the
// established CRD (already served when the create is answered); a name
// added later is accepted by one more status update, and a client's
// status write takes the conditions it replaces from kube-apiserver's
// entry. What kube-apiserver v1.37.2 answers
// (e2e.TestKubeCRDStatusSameAsOurs compares them side by side).
func TestCRDStatusByControllers(t *testing.T) {
	e := newEnv(t)
	rv := path(e.must(200, "GET", crdPath, nil), "metadata", "resourceVersion").(string)
	const name = "probes.example.com"
	crd := `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"` + name + `"},
		"spec":{"group":"example.com","scope":"Namespaced","names":{"plural":"probes","kind":"Probe"},
		"versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}]}}`
	ua := []string{"User-Agent", "client/1.0"}
	check := func(what, got, want string) {
		t.Helper()
		if got != want {
			t.Errorf("%s:\n got: %s\nwant: %s", what, got, want)
		}
	}
	created := e.must(201, "POST", crdPath, crd, ua...)
	check("create", crdStatusView(t, created), `{"acceptedNames":{"kind":"","plural":""},"conditions":null,"storedVersions":["v1"]}`+"\n"+clientEntry)
	// Served once the create is answered.
	e.must(200, "GET", "/apis/example.com/v1/namespaces/default/probes", nil)
	check("get", crdStatusView(t, e.must(200, "GET", crdPath+"/"+name, nil)), establishedStatus+"\n"+clientEntry+"\n"+controllerEntry)

	// A short name and a category: the update's answer has the names
	// accepted before, the naming controller's write the new ones.
	patched := e.must(200, "PATCH", crdPath+"/"+name, `{"spec":{"names":{"shortNames":["pr"],"categories":["all"]}}}`,
		"Content-Type", "application/merge-patch+json", ua[0], ua[1])
	withNames := strings.Replace(clientEntry, `"f:names":{`, `"f:names":{"f:categories":{},`, 1)
	withNames = strings.Replace(withNames, `"f:plural":{},"f:singular":{}}`, `"f:plural":{},"f:shortNames":{},"f:singular":{}}`, 1)
	check("patch", crdStatusView(t, patched), establishedStatus+"\n"+withNames+"\n"+controllerEntry)
	renamed := strings.Replace(establishedStatus, `{"kind":"Probe","listKind":"ProbeList","plural":"probes","singular":"probe"}`,
		`{"categories":["all"],"kind":"Probe","listKind":"ProbeList","plural":"probes","shortNames":["pr"],"singular":"probe"}`, 1)
	renamedEntry := strings.Replace(controllerEntry, `"f:acceptedNames":{"f:kind":{}`, `"f:acceptedNames":{"f:categories":{},"f:kind":{}`, 1)
	renamedEntry = strings.Replace(renamedEntry, `"f:plural":{},"f:singular":{}}`, `"f:plural":{},"f:shortNames":{},"f:singular":{}}`, 1)
	check("renamed", crdStatusView(t, e.must(200, "GET", crdPath+"/"+name, nil)), renamed+"\n"+withNames+"\n"+renamedEntry)

	// A client's status write replacing the conditions owns them now.
	status := e.must(200, "PATCH", crdPath+"/"+name+"/status?fieldManager=me",
		`{"status":{"conditions":[{"type":"Foo","status":"True","lastTransitionTime":"2020-01-01T00:00:00Z","reason":"R","message":"m"}]}}`,
		"Content-Type", "application/merge-patch+json")
	check("status write", crdStatusView(t, status),
		`{"acceptedNames":{"categories":["all"],"kind":"Probe","listKind":"ProbeList","plural":"probes","shortNames":["pr"],"singular":"probe"},"conditions":[{"lastTransitionTime":"T","message":"m","reason":"R","status":"True","type":"Foo"}],"storedVersions":["v1"]}`+"\n"+
			withNames+"\n"+
			`kube-apiserver/Update/status/apiextensions.k8s.io/v1 {"f:status":{"f:acceptedNames":{"f:categories":{},"f:kind":{},"f:listKind":{},"f:plural":{},"f:shortNames":{},"f:singular":{}}}}`+"\n"+
			`me/Update/status/apiextensions.k8s.io/v1 {"f:status":{"f:conditions":{"k:{\"type\":\"Foo\"}":{".":{},"f:lastTransitionTime":{},"f:message":{},"f:reason":{},"f:status":{},"f:type":{}}}}}`)

	// A watcher saw each write: the create, the naming and establishing
	// controllers', the update, the naming controller's, the status
	// write. (The watch ends after a second without events.)
	installing := strings.Replace(establishedStatus, `"reason":"InitialNamesAccepted","status":"True"`, `"reason":"Installing","status":"False"`, 1)
	want := []string{
		"ADDED " + `{"acceptedNames":{"kind":"","plural":""},"conditions":null,"storedVersions":["v1"]}` + "\n" + clientEntry,
		"MODIFIED " + installing + "\n" + clientEntry + "\n" + controllerEntry,
		"MODIFIED " + establishedStatus + "\n" + clientEntry + "\n" + controllerEntry,
		"MODIFIED " + establishedStatus + "\n" + withNames + "\n" + controllerEntry,
		"MODIFIED " + renamed + "\n" + withNames + "\n" + renamedEntry,
		"MODIFIED " + crdStatusView(t, status),
	}
	r := e.do("GET", crdPath+"?watch=1&timeoutSeconds=1&fieldSelector=metadata.name%3D"+name+"&resourceVersion="+rv, nil)
	var got []string
	for _, line := range strings.Split(strings.TrimSpace(string(r.body)), "\n") {
		var ev event
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("watch: %d %q", r.code, r.body)
		}
		got = append(got, ev.Type+" "+crdStatusView(t, ev.Object))
	}
	check("events", strings.Join(got, "\n---\n"), strings.Join(want, "\n---\n"))
}

// TestCRDNamesConflictByController: a CRD asking for a name another CRD
// of its group has is not established (NamesAccepted False, Established
// False NotAccepted, written by the naming controller alone), and is once
// it asks for another.
func TestCRDNamesConflictByController(t *testing.T) {
	e := newEnv(t)
	e.must(201, "POST", crdPath, widgetCRD("Namespaced", "v1"))
	other := widgetCRD("Namespaced", "v1")
	other["metadata"] = map[string]any{"name": "gadgets.example.com"}
	other["spec"].(map[string]any)["names"] = map[string]any{"plural": "gadgets", "kind": "Gadget", "shortNames": []any{"wd"}}
	e.must(201, "POST", crdPath, other)
	got := e.must(200, "GET", crdPath+"/gadgets.example.com", nil)
	v := crdStatusView(t, got)
	if want := `{"acceptedNames":{"kind":"Gadget","listKind":"GadgetList","plural":"gadgets","singular":"gadget"},"conditions":[` +
		`{"lastTransitionTime":"T","message":"\"wd\" is already in use","reason":"ShortNamesConflict","status":"False","type":"NamesAccepted"},` +
		`{"lastTransitionTime":"T","message":"not all names are accepted","reason":"NotAccepted","status":"False","type":"Established"}],"storedVersions":["v1"]}`; !strings.HasPrefix(v, want+"\n") {
		t.Fatalf("conflict:\n got: %s\nwant: %s", v, want)
	}
	e.expectNoRoute("GET", "/apis/example.com/v1/namespaces/default/gadgets")
	e.must(200, "PATCH", crdPath+"/gadgets.example.com", `{"spec":{"names":{"shortNames":["gd"]}}}`, "Content-Type", "application/merge-patch+json")
	e.must(200, "GET", "/apis/example.com/v1/namespaces/default/gadgets", nil)
}

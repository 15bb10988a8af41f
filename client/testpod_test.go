package client

import (
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"slices"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/listwatch/listwatch/wire"
)

// testPod is a typed object of a pod's JSON and protobuf shape, cut down
// to the fields these tests read; it stands in for k8s.io/api's Pod (the
// library's module requires nothing from k8s.io; the tests against
// client-go and k8s.io/api live in the server module, under
// server/compat/client). Its Go field names, JSON names and protobuf
// field numbers are core/v1's, and it has the Marshal/Unmarshal pair that
// makes a Resource ask for protobuf, as every k8s.io/api type has.
type testPod struct {
	wire.TypeMeta `json:",inline"`
	ObjectMeta    `json:"metadata,omitzero"`
	Spec          testPodSpec   `json:"spec,omitzero"`
	Status        testPodStatus `json:"status,omitzero"`
}

// ObjectMeta is core/v1 ObjectMeta's JSON shape (a deletionTimestamp
// kept as its text).
type ObjectMeta struct {
	Name              string            `json:"name,omitempty"`
	GenerateName      string            `json:"generateName,omitempty"`
	Namespace         string            `json:"namespace,omitempty"`
	UID               string            `json:"uid,omitempty"`
	ResourceVersion   string            `json:"resourceVersion,omitempty"`
	DeletionTimestamp *string           `json:"deletionTimestamp,omitempty"`
	Labels            map[string]string `json:"labels,omitempty"`
	Annotations       map[string]string `json:"annotations,omitempty"`
	OwnerReferences   []testOwnerRef    `json:"ownerReferences,omitempty"`
}

type testOwnerRef struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Name       string `json:"name"`
	UID        string `json:"uid"`
	Controller *bool  `json:"controller,omitempty"`
}

type testPodSpec struct {
	Containers []testContainer `json:"containers,omitempty"`
	NodeName   string          `json:"nodeName,omitempty"`
}

type testContainer struct {
	Name  string       `json:"name"`
	Image string       `json:"image,omitempty"`
	Args  []string     `json:"args,omitempty"`
	Env   []testEnvVar `json:"env,omitempty"`
}

type testEnvVar struct {
	Name  string `json:"name"`
	Value string `json:"value,omitempty"`
}

type testPodStatus struct {
	Phase  string `json:"phase,omitempty"`
	HostIP string `json:"hostIP,omitempty"`
	PodIP  string `json:"podIP,omitempty"`
}

func (p *testPod) GetNamespace() string              { return p.ObjectMeta.Namespace }
func (p *testPod) GetName() string                   { return p.ObjectMeta.Name }
func (p *testPod) GetResourceVersion() string        { return p.ObjectMeta.ResourceVersion }
func (p *testPod) SetResourceVersion(rv string)      { p.ObjectMeta.ResourceVersion = rv }
func (p *testPod) GetLabels() map[string]string      { return p.ObjectMeta.Labels }
func (p *testPod) GetAnnotations() map[string]string { return p.ObjectMeta.Annotations }

// benchPod is a pod of realistic size (labels, annotations, a container
// with env and args, status).
func benchPod(i int) *testPod {
	return &testPod{
		TypeMeta: wire.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: ObjectMeta{Name: fmt.Sprintf("pod-%04d", i), Namespace: "bench", ResourceVersion: fmt.Sprint(1000 + i),
			UID: "0b5e3c7e-6d4f-4c1a-9a0e-000000000000", Labels: map[string]string{"app": "bench", "tier": "web", "pod-template-hash": "5d8f7c9b6"},
			Annotations: map[string]string{"kubernetes.io/config.seen": "2026-01-01T00:00:00Z"}},
		Spec: testPodSpec{NodeName: "node-1", Containers: []testContainer{{
			Name: "app", Image: "registry.example/app:v1.2.3", Args: []string{"--port=8080", "--verbose"},
			Env: []testEnvVar{{Name: "A", Value: "1"}, {Name: "B", Value: "2"}},
		}}},
		Status: testPodStatus{Phase: "Running", PodIP: "10.0.0.1", HostIP: "192.168.0.1"},
	}
}

// Protobuf: core/v1's field numbers for the fields above that have one
// here (metadata's name, generateName, namespace, uid, resourceVersion,
// labels and annotations; containers' name and image; nodeName; phase,
// hostIP and podIP). Other fields are skipped, as a generated decoder
// keeps unknown fields aside.

func appendStr(b []byte, n protowire.Number, s string) []byte {
	if s == "" {
		return b
	}
	return protowire.AppendString(protowire.AppendTag(b, n, protowire.BytesType), s)
}

func appendMsg(b []byte, n protowire.Number, m []byte) []byte {
	return protowire.AppendBytes(protowire.AppendTag(b, n, protowire.BytesType), m)
}

func appendMap(b []byte, n protowire.Number, m map[string]string) []byte {
	for _, k := range slices.Sorted(maps.Keys(m)) {
		b = appendMsg(b, n, appendStr(appendStr(nil, 1, k), 2, m[k]))
	}
	return b
}

func (p *testPod) Marshal() ([]byte, error) {
	m := p.ObjectMeta
	var meta, spec, status []byte
	meta = appendStr(meta, 1, m.Name)
	meta = appendStr(meta, 2, m.GenerateName)
	meta = appendStr(meta, 3, m.Namespace)
	meta = appendStr(meta, 5, m.UID)
	meta = appendStr(meta, 6, m.ResourceVersion)
	meta = appendMap(meta, 11, m.Labels)
	meta = appendMap(meta, 12, m.Annotations)
	for _, c := range p.Spec.Containers {
		spec = appendMsg(spec, 2, appendStr(appendStr(nil, 1, c.Name), 2, c.Image))
	}
	spec = appendStr(spec, 10, p.Spec.NodeName)
	status = appendStr(status, 1, p.Status.Phase)
	status = appendStr(status, 5, p.Status.HostIP)
	status = appendStr(status, 6, p.Status.PodIP)
	return appendMsg(appendMsg(appendMsg(nil, 1, meta), 2, spec), 3, status), nil
}

var errTestProto = errors.New("testPod: malformed protobuf")

// eachProtoField calls fn with each field of b: its number and, for a
// length-delimited one, its bytes (nil for other wire types, skipped).
func eachProtoField(b []byte, fn func(protowire.Number, []byte) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return errTestProto
		}
		b = b[n:]
		var v []byte
		if typ == protowire.BytesType {
			v, n = protowire.ConsumeBytes(b)
		} else {
			n = protowire.ConsumeFieldValue(num, typ, b)
		}
		if n < 0 {
			return errTestProto
		}
		b = b[n:]
		if v != nil || typ == protowire.BytesType {
			if err := fn(num, v); err != nil {
				return err
			}
		}
	}
	return nil
}

func readMapEntry(b []byte, m *map[string]string) error {
	var k, v string
	err := eachProtoField(b, func(n protowire.Number, f []byte) error {
		switch n {
		case 1:
			k = string(f)
		case 2:
			v = string(f)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if *m == nil {
		*m = map[string]string{}
	}
	(*m)[k] = v
	return nil
}

func (p *testPod) Unmarshal(b []byte) error {
	*p = testPod{}
	return eachProtoField(b, func(n protowire.Number, f []byte) error {
		switch n {
		case 1:
			m := &p.ObjectMeta
			return eachProtoField(f, func(n protowire.Number, f []byte) error {
				switch n {
				case 1:
					m.Name = string(f)
				case 2:
					m.GenerateName = string(f)
				case 3:
					m.Namespace = string(f)
				case 5:
					m.UID = string(f)
				case 6:
					m.ResourceVersion = string(f)
				case 11:
					return readMapEntry(f, &m.Labels)
				case 12:
					return readMapEntry(f, &m.Annotations)
				}
				return nil
			})
		case 2:
			return eachProtoField(f, func(n protowire.Number, f []byte) error {
				switch n {
				case 2:
					var c testContainer
					err := eachProtoField(f, func(n protowire.Number, f []byte) error {
						switch n {
						case 1:
							c.Name = string(f)
						case 2:
							c.Image = string(f)
						}
						return nil
					})
					p.Spec.Containers = append(p.Spec.Containers, c)
					return err
				case 10:
					p.Spec.NodeName = string(f)
				}
				return nil
			})
		case 3:
			return eachProtoField(f, func(n protowire.Number, f []byte) error {
				switch n {
				case 1:
					p.Status.Phase = string(f)
				case 5:
					p.Status.HostIP = string(f)
				case 6:
					p.Status.PodIP = string(f)
				}
				return nil
			})
		}
		return nil
	})
}

// protoEnvelope is obj in kube-apiserver's protobuf envelope.
func protoEnvelope(tm wire.TypeMeta, obj interface{ Marshal() ([]byte, error) }) []byte {
	raw, err := obj.Marshal()
	if err != nil {
		panic(err)
	}
	return wire.AppendEnvelope(nil, tm, raw)
}

// protoFrame is one protobuf watch frame, as kube-apiserver's watch
// encoder writes it: a 4-byte big-endian length, then a meta/v1
// WatchEvent (type = 1, object = 2, a RawExtension whose raw = 1 is the
// enveloped object).
func protoFrame(typ wire.EventType, enveloped []byte) []byte {
	ev := appendMsg(appendStr(nil, 1, string(typ)), 2, appendMsg(nil, 1, enveloped))
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(ev))), ev...)
}

// podFrame is a watch frame of p.
func podFrame(typ wire.EventType, p *testPod) []byte {
	return protoFrame(typ, protoEnvelope(wire.TypeMeta{APIVersion: "v1", Kind: "Pod"}, p))
}

// statusFrame is an ERROR frame of st (meta/v1 Status: status = 2,
// message = 3, reason = 4, code = 6).
func statusFrame(st *wire.Status) []byte {
	b := appendStr(nil, 2, string(st.Status))
	b = appendStr(b, 3, st.Message)
	b = appendStr(b, 4, string(st.Reason))
	b = protowire.AppendVarint(protowire.AppendTag(b, 6, protowire.VarintType), uint64(st.Code))
	return protoFrame(wire.Error, wire.AppendEnvelope(nil, wire.TypeMeta{APIVersion: "v1", Kind: "Status"}, b))
}

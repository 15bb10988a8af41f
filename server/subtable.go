package server

import (
	"context"
	"encoding/json"
	"fmt"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/registry/customresource/tableconvertor"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	"k8s.io/kubernetes/pkg/apis/autoscaling"
	"k8s.io/kubernetes/pkg/printers"

	"github.com/listwatch/listwatch/server/request"
	"github.com/listwatch/listwatch/wire"
)

// The meta.k8s.io forms of a subresource's answer, as kube's handlers
// make them (transformResponseObject): a Table only from an endpoint
// whose storage converts to Tables, by that storage's convertor; partial
// metadata of whatever object the subresource answers with.

// statusWithoutTable are the built-in resources whose status storage in
// kube is no TableConvertor (their StatusREST has no ConvertToTable): a
// Table of their status is not offered. The other built-ins' status
// storage converts as the resource's own storage does, and a custom
// resource's status scope has the custom resource's convertor.
var statusWithoutTable = map[string]bool{
	groupCRD + "/customresourcedefinitions": true,
	groupAPIRegistration + "/apiservices":   true,
	groupResourceDRA + "/resourceclaims":    true,
	groupResourceDRA + "/devicetaintrules":  true,
}

// tableConverts reports whether kube's storage behind the request's
// endpoint converts its answers to Tables, which its handlers ask before
// they offer one (RequestScope.AllowsMediaTypeTransform): the resource
// itself (not an identity API's review), its status (but statusWithoutTable) and its scale (the
// workloads' scale REST converts by kube's printer of Scale, a custom
// resource's by the columns of its scale paths: scaleTable). The other
// subresources' storage does not (pods' ephemeralcontainers, resize,
// binding and eviction, a service account's token, a namespace's
// finalize, a CertificateSigningRequest's approval), so a Table of them
// is refused as a media type, in favour of a later clause of Accept.
func tableConverts(res *resource, info *request.Info) bool {
	switch info.Subresource {
	case "":
		// The identity APIs' reviews: kube's REST implementations of
		// them convert nothing to a Table (componentstatuses' does).
		return !res.virtual || (res.group != groupAuthentication && res.group != groupAuthorization)
	case "status":
		return res.crd != "" || !statusWithoutTable[res.group+"/"+res.plural]
	case "scale":
		return res.scale != nil
	}
	return false
}

// subresourceObject is an object of a built-in kind a subresource answers
// with (a Scale, a TokenRequest).
type subresourceObject interface {
	runtime.Object
	protoMarshaler
}

// writeTransformed writes obj, a subresource's answer, in the meta.k8s.io
// form out asks for, as kube's transformResponseObject does: partial
// metadata of it (a PartialObjectMetadataList is kube's 406 naming the
// type kube's storage answers with), or its Table (scaleTable; other
// subresources offer none: negotiateTables).
func (c *call) writeTransformed(code int, out output, obj subresourceObject) error {
	switch out.form {
	case formPartial:
		if out.partialList {
			return notAcceptableMsg("you requested PartialObjectMetadataList, but the requested object is not a list (" + c.answerType(obj) + ")")
		}
		b, err := json.Marshal(obj)
		if err != nil {
			return wire.NewInternalError(err)
		}
		if out.proto {
			raw, err := partialItem(b)
			if err != nil {
				return wire.NewInternalError(err)
			}
			writeBody(c.w, code, mediaProto, envelope(out.metaAPIVersion(), "PartialObjectMetadata", raw))
			return nil
		}
		po, err := partialObject(b, out.metaAPIVersion())
		if err != nil {
			return wire.NewInternalError(err)
		}
		writeRaw(c.w, code, po)
		return nil
	case formTable:
		opts, err := c.tableOptions(out)
		if err != nil {
			return err
		}
		s, ok := obj.(*autoscalingv1.Scale)
		if !ok {
			return wire.NewInternalError(fmt.Errorf("no Table of a %T", obj))
		}
		t, err := c.scaleTable(s, opts)
		if err != nil {
			return err
		}
		writeJSON(c.w, code, t)
		return nil
	}
	return wire.NewInternalError(fmt.Errorf("no transformation to form %d", out.form))
}

// answerType is the Go type of obj as kube's storage answers with it,
// which kube's 406 messages name: the internal type of a built-in kind
// (*autoscaling.Scale), but the autoscaling/v1 Scale a custom resource's
// scale REST makes (*v1.Scale).
func (c *call) answerType(obj runtime.Object) string {
	if c.res.crd != "" {
		return fmt.Sprintf("%T", obj)
	}
	if kinds, _, err := legacyscheme.Scheme.ObjectKinds(obj); err == nil {
		internal := kinds[0]
		internal.Version = runtime.APIVersionInternal
		if in, err := legacyscheme.Scheme.New(internal); err == nil {
			return fmt.Sprintf("%T", in)
		}
	}
	return fmt.Sprintf("%T", obj)
}

// scaleTable is the Table of Scale s as kube's scale storage makes it:
// for a built-in workload by kube's printer of the internal Scale (the
// workload's store's convertor, which its ScaleREST calls), for a custom
// resource by the apiextensions server's convertor of the version's scale
// columns (scaleColumns); then its rows' objects as opts says (kubeTable).
func (c *call) scaleTable(s *autoscalingv1.Scale, opts tableOptions) (*wire.Table, error) {
	var kt *metav1.Table
	if c.res.crd != "" {
		conv, err := tableconvertor.New(scaleColumns(c.res.scale))
		if err != nil {
			return nil, wire.NewInternalError(err)
		}
		if kt, err = conv.ConvertToTable(context.Background(), s, &metav1.TableOptions{}); err != nil {
			return nil, wire.NewInternalError(err)
		}
	} else {
		in := &autoscaling.Scale{}
		if err := legacyscheme.Scheme.Convert(s, in, nil); err != nil {
			return nil, wire.NewInternalError(err)
		}
		var err error
		if kt, err = kubePrinter.GenerateTable(in, printers.GenerateOptions{Wide: true}); err != nil {
			return nil, wire.NewInternalError(err)
		}
	}
	value, err := json.Marshal(s)
	if err != nil {
		return nil, wire.NewInternalError(err)
	}
	return kubeTable(kt, opts, value)
}

// scaleColumns are the columns of a custom resource's scale Table, as
// kube's apiextensions server makes them of the version's scale
// subresource (getScaleColumnsForVersion): Desired and Available when the
// spec and status replicas paths are set, then Age.
func scaleColumns(sc *crScale) []apiextensionsv1.CustomResourceColumnDefinition {
	var cols []apiextensionsv1.CustomResourceColumnDefinition
	if sc != nil && sc.SpecReplicasPath != "" {
		cols = append(cols, apiextensionsv1.CustomResourceColumnDefinition{Name: "Desired", Type: "integer",
			Description: "Number of desired replicas", JSONPath: ".spec.replicas"})
	}
	if sc != nil && sc.StatusReplicasPath != "" {
		cols = append(cols, apiextensionsv1.CustomResourceColumnDefinition{Name: "Available", Type: "integer",
			Description: "Number of actual replicas", JSONPath: ".status.replicas"})
	}
	return append(cols, apiextensionsv1.CustomResourceColumnDefinition{Name: "Age", Type: "date",
		Description: metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"], JSONPath: ".metadata.creationTimestamp"})
}

// kubeTable is kt, a Table kube's convertor made of one object (value,
// its JSON), as kube's handler answers it (asTable): its resourceVersion,
// its columns (none when opts says so), and each row's object the object
// itself, its partial metadata or nothing, as opts says.
func kubeTable(kt *metav1.Table, opts tableOptions, value []byte) (*wire.Table, error) {
	t := &wire.Table{
		TypeMeta: wire.TypeMeta{Kind: "Table", APIVersion: opts.apiVersion},
		Metadata: wire.ListMeta{ResourceVersion: kt.ResourceVersion},
		Rows:     make([]wire.TableRow, 0, len(kt.Rows)),
	}
	if !opts.noHeaders {
		for _, c := range kt.ColumnDefinitions {
			t.ColumnDefinitions = append(t.ColumnDefinitions, wire.TableColumnDefinition{Name: c.Name, Type: c.Type, Format: c.Format,
				Description: c.Description, Priority: c.Priority})
		}
	}
	for _, r := range kt.Rows {
		row := wire.TableRow{Cells: r.Cells}
		switch opts.include {
		case includeFull:
			row.Object = value
		case includeMetadata:
			po, err := partialObject(value, opts.apiVersion)
			if err != nil {
				return nil, wire.NewInternalError(err)
			}
			row.Object = po
		}
		t.Rows = append(t.Rows, row)
	}
	return t, nil
}

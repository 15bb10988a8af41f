package server

import (
	"encoding/json"
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"

	"github.com/listwatch/listwatch/wire"
)

// contentProtobuf is the body type kubectl and client-go's typed clients
// send for built-in kinds. listwatch stores JSON, so such a body is
// decoded into the k8s.io/api type and re-encoded as JSON before anything
// else sees it. Responses are protobuf when the client asks (proto.go).
const contentProtobuf = "application/vnd.kubernetes.protobuf"

// protobufScheme knows the built-in kinds served here.
var protobufScheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range append([]func(*runtime.Scheme) error{
		corev1.AddToScheme, coordinationv1.AddToScheme, appsv1.AddToScheme, batchv1.AddToScheme,
		rbacv1.AddToScheme, policyv1.AddToScheme, schedulingv1.AddToScheme, networkingv1.AddToScheme,
		discoveryv1.AddToScheme,
	}, groupsProtobuf...) { // groupsProtobuf: kinds_groups.go
		if err := add(s); err != nil {
			panic(err)
		}
	}
	// CustomResourceDefinitions are served in protobuf too, as kube's
	// apiextensions server does (its clientset asks for it); custom
	// resources are not.
	if err := apiextensionsv1.AddToScheme(s); err != nil {
		panic(err)
	}
	if err := admissionregistrationv1.AddToScheme(s); err != nil {
		panic(err)
	}
	return s
}()

// protobufCodec decodes protobuf request bodies of those kinds.
var protobufCodec = protobuf.NewSerializer(protobufScheme, protobufScheme)

// protobufToJSON converts a protobuf-encoded built-in object to JSON.
func protobufToJSON(b []byte) ([]byte, error) {
	_, j, err := decodeProtobuf(b)
	return j, err
}

// decodeProtobuf decodes a protobuf-encoded built-in object, and encodes
// it as JSON.
func decodeProtobuf(b []byte) (runtime.Object, []byte, error) {
	obj, _, err := protobufCodec.Decode(b, nil, nil)
	if err != nil {
		return nil, nil, wire.NewBadRequest(fmt.Sprintf("unable to decode protobuf body: %v", err))
	}
	j, err := json.Marshal(obj)
	if err != nil {
		// A value protobuf carries that JSON cannot (an IntOrString of
		// an unknown type): this server stores JSON.
		return nil, nil, wire.NewBadRequest(fmt.Sprintf("unable to decode protobuf body: %v", err))
	}
	return obj, j, nil
}

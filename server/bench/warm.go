package bench

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/listwatch/listwatch/client"
	"github.com/listwatch/listwatch/object"
	"github.com/listwatch/listwatch/wire"
)

// warmServer lists the fixture once in protobuf and once in JSON before
// the first informer starts. The informers run one after another against
// one server, and without this the first of them would also pay for what
// a server does once per object and then shares with every later reader:
// listwatch serve builds its watch cache on the first read and encodes each
// object in protobuf on the first protobuf read. Every implementation then
// meets a warm server, whatever the order of --impls.
func warmServer(ctx context.Context, c *client.Client, f *Fixture) error {
	var err error
	if f.Kind == FixturePods {
		_, err = client.NewResource[*corev1.Pod](c, podsGVR).Namespace(f.Namespace).ListAll(ctx, wire.ListOptions{})
	} else {
		_, err = client.NewResource[*corev1.ConfigMap](c, configMapsGVR).Namespace(f.Namespace).ListAll(ctx, wire.ListOptions{})
	}
	if err == nil {
		gvr := configMapsGVR
		if f.Kind == FixturePods {
			gvr = podsGVR
		}
		_, err = client.NewResource[*object.Unstructured](c, gvr).Namespace(f.Namespace).ListAll(ctx, wire.ListOptions{})
	}
	if err != nil {
		return fmt.Errorf("bench: warming the server: %w", err)
	}
	return nil
}

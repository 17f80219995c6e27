package backup_test

import (
	"bytes"
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/restoregraph/restoregraph/archive"
	"github.com/restoregraph/restoregraph/backup"
	"github.com/restoregraph/restoregraph/filter"
	"github.com/restoregraph/restoregraph/memcluster"
)

// A namespace backed up as Velero writes backups, its manifest inside: the tarball
// reads back with every object at every version the cluster serves.
func ExampleRun() {
	cfg, stop, err := memcluster.Start(memcluster.Options{})
	if err != nil {
		panic(err)
	}
	defer stop()
	ctx := context.Background()
	cs := kubernetes.NewForConfigOrDie(cfg)
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}}, metav1.CreateOptions{}); err != nil {
		panic(err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings", Namespace: "shop"}, Data: map[string]string{"color": "blue"}}
	if _, err := cs.CoreV1().ConfigMaps("shop").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		panic(err)
	}

	var tarball bytes.Buffer
	src := backup.Source{Dynamic: dynamic.NewForConfigOrDie(cfg), Discovery: cs.Discovery()}
	res, err := backup.Run(ctx, src, &tarball, backup.Options{Filter: filter.Spec{IncludeNamespaces: []string{"shop"}}})
	if err != nil {
		panic(err)
	}
	fmt.Println("backed up:", res.Objects, "objects, incomplete:", len(res.Incomplete))

	b, err := archive.Read(ctx, &tarball, archive.Options{})
	if err != nil {
		panic(err)
	}
	defer b.Close()
	for it := range b.Manifest().All() {
		fmt.Println(it.Kind, it.Namespace, it.Name)
	}
	// Output:
	// backed up: 2 objects, incomplete: 0
	// Namespace  shop
	// ConfigMap shop settings
}

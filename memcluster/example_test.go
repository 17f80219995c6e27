package memcluster_test

import (
	"context"
	"fmt"

	"github.com/restoregraph/restoregraph/memcluster"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

func Example() {
	cfg, stop, err := memcluster.Start(memcluster.Options{})
	if err != nil {
		panic(err)
	}
	defer stop()

	cs := kubernetes.NewForConfigOrDie(cfg) // client-go, unchanged
	ctx := context.Background()
	cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}}, metav1.CreateOptions{})
	cm, _ := cs.CoreV1().ConfigMaps("shop").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings"}}, metav1.CreateOptions{})
	fmt.Println(cm.Name, cm.UID != "")

	_, err = cs.CoreV1().ConfigMaps("nowhere").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, metav1.CreateOptions{})
	fmt.Println(err)
	// Output:
	// settings true
	// namespaces "nowhere" not found
}

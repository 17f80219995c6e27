package memcluster

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
)

var (
	claimsGR  = schema.GroupResource{Resource: "persistentvolumeclaims"}
	volumesGR = schema.GroupResource{Resource: "persistentvolumes"}
)

// bindVolumes binds a claim and a volume that name each other, as
// kube-controller-manager's persistentvolume-binder binds pre-bound ones, once either
// is written: a claim whose spec.volumeName names a volume that is free or claimed by
// it, or a volume whose spec.claimRef names a claim that names no other volume. The
// volume's claimRef takes the claim's UID, the claim its volumeName, and both are
// Bound. Nothing is provisioned: a claim that names no volume stays Pending, as in a
// cluster without a provisioner for its class. The caller holds s.mu.
func (s *Server) bindVolumes(gr schema.GroupResource, obj object) {
	if !s.opts.BindVolumes || gr != claimsGR && gr != volumesGR {
		return
	}
	// The object as stored, decoded: what a create was given may hold values left as
	// their JSON.
	md := meta(obj)
	ns, _ := md["namespace"].(string)
	name, _ := md["name"].(string)
	st, ok := s.objects.get(key{gr: gr, namespace: ns, name: name})
	if !ok {
		return
	}
	spec, _ := st.object()["spec"].(map[string]any)
	if gr == claimsGR {
		if volume, _ := spec["volumeName"].(string); volume != "" {
			if _, there := s.objects.get(key{gr: volumesGR, name: volume}); !there {
				s.claimsFor[volume] = key{gr: claimsGR, namespace: ns, name: name} // bound once it comes
				return
			}
			s.bind(ns, name, volume)
		}
		return
	}
	ref, _ := spec["claimRef"].(map[string]any)
	rns, _ := ref["namespace"].(string)
	claim, _ := ref["name"].(string)
	if k, waiting := s.claimsFor[name]; waiting && claim == "" {
		rns, claim = k.namespace, k.name
	}
	delete(s.claimsFor, name)
	if claim != "" {
		s.bind(rns, claim, name)
	}
}

// bind binds claim ns/claimName and volume volumeName when both exist and each is
// free or already the other's.
func (s *Server) bind(ns, claimName, volumeName string) {
	cst, ok := s.objects.get(key{gr: claimsGR, namespace: ns, name: claimName})
	if !ok {
		return
	}
	vst, ok := s.objects.get(key{gr: volumesGR, name: volumeName})
	if !ok {
		return
	}
	claim, volume := cst.object(), vst.object()
	cspec, _ := claim["spec"].(map[string]any)
	vspec, _ := volume["spec"].(map[string]any)
	if cspec == nil || vspec == nil {
		return
	}
	if named, _ := cspec["volumeName"].(string); named != "" && named != volumeName {
		return // the claim names another volume
	}
	uid := string(cst.uid())
	ref, _ := vspec["claimRef"].(map[string]any)
	if ref != nil {
		rns, _ := ref["namespace"].(string)
		rname, _ := ref["name"].(string)
		ruid, _ := ref["uid"].(string)
		if rns != ns || rname != claimName || ruid != "" && ruid != uid {
			return // the volume is another claim's
		}
	}
	if phaseOf(claim) == "Bound" && phaseOf(volume) == "Bound" && ref != nil && ref["uid"] == uid {
		return
	}
	vspec["claimRef"] = map[string]any{"kind": "PersistentVolumeClaim", "apiVersion": "v1", "namespace": ns, "name": claimName,
		"uid": uid, "resourceVersion": meta(claim)["resourceVersion"]}
	volume["status"] = map[string]any{"phase": "Bound"}
	meta(volume)["resourceVersion"] = s.nextRV()
	s.record(watch.Modified, key{gr: volumesGR, name: volumeName}, volume)

	cspec["volumeName"] = volumeName
	cmd := meta(claim)
	ann, _ := cmd["annotations"].(map[string]any)
	if ann == nil {
		ann = map[string]any{}
		cmd["annotations"] = ann
	}
	ann["pv.kubernetes.io/bind-completed"] = "yes"
	status := map[string]any{"phase": "Bound"}
	if am, ok := vspec["accessModes"]; ok {
		status["accessModes"] = am
	}
	if c, ok := vspec["capacity"]; ok {
		status["capacity"] = c
	}
	claim["status"] = status
	cmd["resourceVersion"] = s.nextRV()
	s.record(watch.Modified, key{gr: claimsGR, namespace: ns, name: claimName}, claim)
}

func phaseOf(obj object) string {
	status, _ := obj["status"].(map[string]any)
	phase, _ := status["phase"].(string)
	return phase
}

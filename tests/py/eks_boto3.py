"""boto3 against an EKS endpoint (AWS_ENDPOINT_URL_EKS): the user flow with
waiters, and every operation of botocore's EKS model called once with valid
input.

    python3 eks_boto3.py flow       # asserts the flow, exits non-zero on failure
    python3 eks_boto3.py terraform  # terraform-provider-aws's call sequences
    python3 eks_boto3.py all-ops    # prints {"Operation": "ok" | "<error code>"}
    python3 eks_boto3.py bench N    # runs the all-ops sequence N times, prints
                                    # {"ops": covered, "requests": n, "seconds": t}
"""
import json
import sys
import time

import boto3
import botocore.exceptions

ROLE = "arn:aws:iam::123456789012:role/eks"
DEV = "arn:aws:iam::123456789012:role/dev"
ADMIN = "arn:aws:eks::aws:cluster-access-policy/AmazonEKSViewPolicy"
FAST = {"Delay": 1, "MaxAttempts": 30}


def client():
    return boto3.client("eks", region_name="us-east-1")


def code(e):
    return e.response.get("Error", {}).get("Code", "?")


def flow():
    eks = client()
    c = eks.create_cluster(name="flow", version="1.32", roleArn=ROLE,
                           resourcesVpcConfig={"subnetIds": ["subnet-a", "subnet-b"]},
                           tags={"team": "a"})["cluster"]
    assert c["arn"] == "arn:aws:eks:us-east-1:000000000000:cluster/flow", c
    eks.get_waiter("cluster_active").wait(name="flow", WaiterConfig=FAST)
    d = eks.describe_cluster(name="flow")["cluster"]
    assert d["status"] == "ACTIVE" and d["endpoint"].startswith("https://"), d
    assert hasattr(d["createdAt"], "year"), "timestamps parse as datetimes"
    for n in ("p1", "p2", "p3"):
        eks.create_cluster(name=n, roleArn=ROLE, resourcesVpcConfig={"subnetIds": ["s"]})
    pages = list(eks.get_paginator("list_clusters").paginate(PaginationConfig={"PageSize": 2}))
    assert len(pages) == 2 and sum((p["clusters"] for p in pages), []) == ["flow", "p1", "p2", "p3"], pages
    try:
        eks.describe_cluster(name="nope")
        raise AssertionError("describe of a missing cluster succeeded")
    except eks.exceptions.ResourceNotFoundException as e:
        assert e.response["ResponseMetadata"]["HTTPStatusCode"] == 404

    eks.create_nodegroup(clusterName="flow", nodegroupName="ng", subnets=["subnet-a"], nodeRole=ROLE,
                         scalingConfig={"minSize": 1, "maxSize": 4, "desiredSize": 2})
    eks.get_waiter("nodegroup_active").wait(clusterName="flow", nodegroupName="ng", WaiterConfig=FAST)
    u = eks.update_nodegroup_config(clusterName="flow", nodegroupName="ng",
                                    scalingConfig={"desiredSize": 4},
                                    labels={"addOrUpdateLabels": {"tier": "web"}})["update"]
    u = eks.describe_update(name="flow", updateId=u["id"], nodegroupName="ng")["update"]
    assert u["status"] == "Successful", u
    ng = eks.describe_nodegroup(clusterName="flow", nodegroupName="ng")["nodegroup"]
    assert ng["scalingConfig"]["desiredSize"] == 4 and ng["labels"] == {"tier": "web"}, ng
    v = eks.update_cluster_version(name="flow", version="1.33")["update"]
    assert eks.describe_update(name="flow", updateId=v["id"])["update"]["status"] == "Successful"
    assert eks.describe_cluster(name="flow")["cluster"]["version"] == "1.33"
    eks.update_nodegroup_version(clusterName="flow", nodegroupName="ng")
    assert eks.describe_nodegroup(clusterName="flow", nodegroupName="ng")["nodegroup"]["version"] == "1.33"

    eks.create_addon(clusterName="flow", addonName="coredns")
    eks.get_waiter("addon_active").wait(clusterName="flow", addonName="coredns", WaiterConfig=FAST)
    eks.create_access_entry(clusterName="flow", principalArn=DEV, kubernetesGroups=["devs"])
    eks.associate_access_policy(clusterName="flow", principalArn=DEV, policyArn=ADMIN,
                                accessScope={"type": "cluster"})
    pols = eks.list_associated_access_policies(clusterName="flow", principalArn=DEV)["associatedAccessPolicies"]
    assert [p["policyArn"] for p in pols] == [ADMIN], pols
    eks.tag_resource(resourceArn=c["arn"], tags={"k": "v"})
    assert eks.list_tags_for_resource(resourceArn=c["arn"])["tags"] == {"team": "a", "k": "v"}
    try:
        eks.list_tags_for_resource(resourceArn="arn:aws:eks:us-east-1:000000000000:cluster/nope")
        raise AssertionError("tags of a missing cluster")
    except eks.exceptions.NotFoundException:
        pass

    eks.create_fargate_profile(clusterName="flow", fargateProfileName="fp", podExecutionRoleArn=ROLE,
                               selectors=[{"namespace": "default"}])
    eks.get_waiter("fargate_profile_active").wait(clusterName="flow", fargateProfileName="fp", WaiterConfig=FAST)
    eks.delete_fargate_profile(clusterName="flow", fargateProfileName="fp")
    eks.get_waiter("fargate_profile_deleted").wait(clusterName="flow", fargateProfileName="fp", WaiterConfig=FAST)
    eks.delete_addon(clusterName="flow", addonName="coredns", preserve=True)
    eks.get_waiter("addon_deleted").wait(clusterName="flow", addonName="coredns", WaiterConfig=FAST)
    try:
        eks.delete_cluster(name="flow")
        raise AssertionError("deleted a cluster with a node group")
    except eks.exceptions.ResourceInUseException:
        pass
    eks.delete_nodegroup(clusterName="flow", nodegroupName="ng")
    eks.get_waiter("nodegroup_deleted").wait(clusterName="flow", nodegroupName="ng", WaiterConfig=FAST)
    assert eks.delete_cluster(name="flow")["cluster"]["status"] == "DELETING"
    eks.get_waiter("cluster_deleted").wait(name="flow", WaiterConfig=FAST)
    print("flow ok")


def poll(fn, done, tries=30):
    """Polls as terraform's state refreshers do (without their sleeps)."""
    for _ in range(tries):
        try:
            out = fn()
        except botocore.exceptions.ClientError as e:
            out = e
        if done(out):
            return out
    raise AssertionError(f"never reached the wanted state: {out}")


def gone(out):
    return isinstance(out, botocore.exceptions.ClientError) and code(out) == "ResourceNotFoundException"


def update_done(eks, **kw):
    u = poll(lambda: eks.describe_update(**kw)["update"], lambda u: u["status"] != "InProgress")
    assert u["status"] == "Successful", u


def terraform():
    """The calls aws_eks_cluster, aws_eks_node_group and aws_eks_addon make
    (create, wait, read, update + DescribeUpdate, tags, delete, wait gone),
    after the provider's STS identity check."""
    sts = boto3.client("sts", region_name="us-east-1")
    ident = sts.get_caller_identity()
    assert ident["Account"] == "000000000000" and ident["Arn"].endswith(":user/test"), ident
    eks = client()
    # aws_eks_cluster
    eks.create_cluster(name="tf", roleArn=ROLE, version="1.32",
                       resourcesVpcConfig={"subnetIds": ["subnet-a", "subnet-b"], "endpointPrivateAccess": False,
                                           "endpointPublicAccess": True},
                       accessConfig={"authenticationMode": "API_AND_CONFIG_MAP",
                                     "bootstrapClusterCreatorAdminPermissions": True},
                       tags={"Name": "tf"})
    c = poll(lambda: eks.describe_cluster(name="tf")["cluster"], lambda c: c["status"] == "ACTIVE")
    assert c["accessConfig"]["authenticationMode"] == "API_AND_CONFIG_MAP", c
    u = eks.update_cluster_version(name="tf", version="1.33")["update"]
    update_done(eks, name="tf", updateId=u["id"])
    u = eks.update_cluster_config(name="tf", resourcesVpcConfig={"endpointPrivateAccess": True,
                                                                 "endpointPublicAccess": True})["update"]
    assert u["type"] == "EndpointAccessUpdate", u
    update_done(eks, name="tf", updateId=u["id"])
    u = eks.update_cluster_config(name="tf", accessConfig={"authenticationMode": "API"})["update"]
    update_done(eks, name="tf", updateId=u["id"])
    u = eks.associate_encryption_config(clusterName="tf", encryptionConfig=[
        {"resources": ["secrets"], "provider": {"keyArn": "arn:aws:kms:us-east-1:000000000000:key/k"}}])["update"]
    update_done(eks, name="tf", updateId=u["id"])
    arn = eks.describe_cluster(name="tf")["cluster"]["arn"]
    eks.untag_resource(resourceArn=arn, tagKeys=["Name"])
    eks.tag_resource(resourceArn=arn, tags={"Env": "test"})
    c = eks.describe_cluster(name="tf")["cluster"]
    assert c["tags"] == {"Env": "test"} and c["version"] == "1.33", c
    assert c["resourcesVpcConfig"]["endpointPrivateAccess"] is True, c
    assert c["accessConfig"]["authenticationMode"] == "API", c

    # aws_eks_node_group
    eks.create_nodegroup(clusterName="tf", nodegroupName="ng", nodeRole=ROLE, subnets=["subnet-a"],
                         scalingConfig={"minSize": 1, "maxSize": 3, "desiredSize": 1},
                         instanceTypes=["m5.large"], labels={"a": "b"},
                         taints=[{"key": "k", "value": "v", "effect": "NO_EXECUTE"}],
                         updateConfig={"maxUnavailable": 1}, tags={"Name": "ng"})
    poll(lambda: eks.describe_nodegroup(clusterName="tf", nodegroupName="ng")["nodegroup"],
         lambda n: n["status"] == "ACTIVE")
    u = eks.update_nodegroup_config(clusterName="tf", nodegroupName="ng",
                                    scalingConfig={"minSize": 1, "maxSize": 5, "desiredSize": 3},
                                    labels={"addOrUpdateLabels": {"c": "d"}, "removeLabels": ["a"]},
                                    taints={"removeTaints": [{"key": "k", "value": "v", "effect": "NO_EXECUTE"}]},
                                    updateConfig={"maxUnavailablePercentage": 50})["update"]
    update_done(eks, name="tf", updateId=u["id"], nodegroupName="ng")
    u = eks.update_nodegroup_version(clusterName="tf", nodegroupName="ng", version="1.33")["update"]
    update_done(eks, name="tf", updateId=u["id"], nodegroupName="ng")
    n = eks.describe_nodegroup(clusterName="tf", nodegroupName="ng")["nodegroup"]
    assert n["labels"] == {"c": "d"} and n["taints"] == [] and n["scalingConfig"]["desiredSize"] == 3, n
    assert n["version"] == "1.33", n

    # aws_eks_addon
    versions = eks.describe_addon_versions(addonName="kube-proxy", kubernetesVersion="1.33")["addons"][0]["addonVersions"]
    eks.create_addon(clusterName="tf", addonName="kube-proxy", addonVersion=versions[-1]["addonVersion"],
                     resolveConflicts="OVERWRITE", tags={"Name": "kp"})
    poll(lambda: eks.describe_addon(clusterName="tf", addonName="kube-proxy")["addon"],
         lambda a: a["status"] == "ACTIVE")
    u = eks.update_addon(clusterName="tf", addonName="kube-proxy", addonVersion=versions[0]["addonVersion"],
                         resolveConflicts="OVERWRITE", configurationValues='{"mode":"ipvs"}')["update"]
    update_done(eks, name="tf", updateId=u["id"], addonName="kube-proxy")
    a = eks.describe_addon(clusterName="tf", addonName="kube-proxy")["addon"]
    assert a["addonVersion"] == versions[0]["addonVersion"] and a["configurationValues"] == '{"mode":"ipvs"}', a

    # Destroy, in terraform's dependency order.
    eks.delete_addon(clusterName="tf", addonName="kube-proxy", preserve=False)
    poll(lambda: eks.describe_addon(clusterName="tf", addonName="kube-proxy"), gone)
    eks.delete_nodegroup(clusterName="tf", nodegroupName="ng")
    poll(lambda: eks.describe_nodegroup(clusterName="tf", nodegroupName="ng"), gone)
    eks.delete_cluster(name="tf")
    poll(lambda: eks.describe_cluster(name="tf"), gone)
    print("terraform ok")


def all_ops(eks, n):
    """Every operation once, in an order where each has what it needs. Yields
    (operation, thunk)."""
    c = f"all{n}"
    arn = f"arn:aws:eks:us-east-1:000000000000:cluster/{c}"
    st = {}
    yield "CreateCluster", lambda: eks.create_cluster(name=c, roleArn=ROLE, resourcesVpcConfig={"subnetIds": ["s"]}, version="1.32")
    yield "DescribeCluster", lambda: eks.describe_cluster(name=c)
    yield "ListClusters", lambda: eks.list_clusters()
    yield "DescribeClusterVersions", lambda: eks.describe_cluster_versions(clusterVersions=["1.32", "1.31"])
    yield "UpdateClusterConfig", lambda: st.__setitem__("u", eks.update_cluster_config(name=c, logging={"clusterLogging": [{"types": ["api"], "enabled": True}]})["update"]["id"])
    yield "DescribeUpdate", lambda: eks.describe_update(name=c, updateId=st["u"])
    yield "ListUpdates", lambda: eks.list_updates(name=c)
    yield "UpdateClusterVersion", lambda: eks.update_cluster_version(name=c, version="1.33")
    yield "AssociateEncryptionConfig", lambda: eks.associate_encryption_config(clusterName=c, encryptionConfig=[{"resources": ["secrets"], "provider": {"keyArn": "arn:aws:kms:us-east-1:000000000000:key/k"}}])
    yield "CreateNodegroup", lambda: eks.create_nodegroup(clusterName=c, nodegroupName="ng", subnets=["s"], nodeRole=ROLE)
    yield "DescribeNodegroup", lambda: eks.describe_nodegroup(clusterName=c, nodegroupName="ng")
    yield "ListNodegroups", lambda: eks.list_nodegroups(clusterName=c)
    yield "UpdateNodegroupConfig", lambda: eks.update_nodegroup_config(clusterName=c, nodegroupName="ng", scalingConfig={"desiredSize": 1})
    yield "UpdateNodegroupVersion", lambda: eks.update_nodegroup_version(clusterName=c, nodegroupName="ng")
    yield "DescribeAddonVersions", lambda: eks.describe_addon_versions(kubernetesVersion="1.33")
    yield "DescribeAddonConfiguration", lambda: eks.describe_addon_configuration(addonName="vpc-cni", addonVersion="v1.20.4-eksbuild.1")
    yield "CreateAddon", lambda: eks.create_addon(clusterName=c, addonName="vpc-cni")
    yield "DescribeAddon", lambda: eks.describe_addon(clusterName=c, addonName="vpc-cni")
    yield "ListAddons", lambda: eks.list_addons(clusterName=c)
    yield "UpdateAddon", lambda: eks.update_addon(clusterName=c, addonName="vpc-cni", addonVersion="v1.19.6-eksbuild.1")
    yield "ListAccessPolicies", lambda: eks.list_access_policies()
    yield "CreateAccessEntry", lambda: eks.create_access_entry(clusterName=c, principalArn=DEV)
    yield "DescribeAccessEntry", lambda: eks.describe_access_entry(clusterName=c, principalArn=DEV)
    yield "ListAccessEntries", lambda: eks.list_access_entries(clusterName=c)
    yield "UpdateAccessEntry", lambda: eks.update_access_entry(clusterName=c, principalArn=DEV, kubernetesGroups=["g"])
    yield "AssociateAccessPolicy", lambda: eks.associate_access_policy(clusterName=c, principalArn=DEV, policyArn=ADMIN, accessScope={"type": "namespace", "namespaces": ["a"]})
    yield "ListAssociatedAccessPolicies", lambda: eks.list_associated_access_policies(clusterName=c, principalArn=DEV)
    yield "DisassociateAccessPolicy", lambda: eks.disassociate_access_policy(clusterName=c, principalArn=DEV, policyArn=ADMIN)
    yield "DeleteAccessEntry", lambda: eks.delete_access_entry(clusterName=c, principalArn=DEV)
    yield "CreateFargateProfile", lambda: eks.create_fargate_profile(clusterName=c, fargateProfileName="fp", podExecutionRoleArn=ROLE, selectors=[{"namespace": "default"}])
    yield "DescribeFargateProfile", lambda: eks.describe_fargate_profile(clusterName=c, fargateProfileName="fp")
    yield "ListFargateProfiles", lambda: eks.list_fargate_profiles(clusterName=c)
    yield "DeleteFargateProfile", lambda: eks.delete_fargate_profile(clusterName=c, fargateProfileName="fp")
    yield "AssociateIdentityProviderConfig", lambda: eks.associate_identity_provider_config(clusterName=c, oidc={"identityProviderConfigName": "idp", "issuerUrl": "https://issuer.example", "clientId": "kemu"})
    yield "DescribeIdentityProviderConfig", lambda: eks.describe_identity_provider_config(clusterName=c, identityProviderConfig={"type": "oidc", "name": "idp"})
    yield "ListIdentityProviderConfigs", lambda: eks.list_identity_provider_configs(clusterName=c)
    yield "DisassociateIdentityProviderConfig", lambda: eks.disassociate_identity_provider_config(clusterName=c, identityProviderConfig={"type": "oidc", "name": "idp"})
    yield "CreatePodIdentityAssociation", lambda: st.__setitem__("a", eks.create_pod_identity_association(clusterName=c, namespace="default", serviceAccount="sa", roleArn=ROLE)["association"]["associationId"])
    yield "DescribePodIdentityAssociation", lambda: eks.describe_pod_identity_association(clusterName=c, associationId=st["a"])
    yield "ListPodIdentityAssociations", lambda: eks.list_pod_identity_associations(clusterName=c, namespace="default")
    yield "UpdatePodIdentityAssociation", lambda: eks.update_pod_identity_association(clusterName=c, associationId=st["a"], roleArn=DEV)
    yield "DeletePodIdentityAssociation", lambda: eks.delete_pod_identity_association(clusterName=c, associationId=st["a"])
    yield "CreateCapability", lambda: eks.create_capability(clusterName=c, capabilityName="cap", type="KRO", roleArn=ROLE, deletePropagationPolicy="RETAIN")
    yield "DescribeCapability", lambda: eks.describe_capability(clusterName=c, capabilityName="cap")
    yield "ListCapabilities", lambda: eks.list_capabilities(clusterName=c)
    yield "UpdateCapability", lambda: eks.update_capability(clusterName=c, capabilityName="cap", roleArn=DEV)
    yield "DeleteCapability", lambda: eks.delete_capability(clusterName=c, capabilityName="cap")
    yield "ListInsights", lambda: st.__setitem__("i", eks.list_insights(clusterName=c)["insights"][0]["id"])
    yield "DescribeInsight", lambda: eks.describe_insight(clusterName=c, id=st["i"])
    yield "StartInsightsRefresh", lambda: eks.start_insights_refresh(clusterName=c)
    yield "DescribeInsightsRefresh", lambda: eks.describe_insights_refresh(clusterName=c)
    yield "TagResource", lambda: eks.tag_resource(resourceArn=arn, tags={"a": "b"})
    yield "ListTagsForResource", lambda: eks.list_tags_for_resource(resourceArn=arn)
    yield "UntagResource", lambda: eks.untag_resource(resourceArn=arn, tagKeys=["a"])
    yield "CreateEksAnywhereSubscription", lambda: st.__setitem__("s", eks.create_eks_anywhere_subscription(name=f"sub{n}", term={"duration": 12, "unit": "MONTHS"})["subscription"]["id"])
    yield "DescribeEksAnywhereSubscription", lambda: eks.describe_eks_anywhere_subscription(id=st["s"])
    yield "ListEksAnywhereSubscriptions", lambda: eks.list_eks_anywhere_subscriptions()
    yield "UpdateEksAnywhereSubscription", lambda: eks.update_eks_anywhere_subscription(id=st["s"], autoRenew=True)
    yield "DeleteEksAnywhereSubscription", lambda: eks.delete_eks_anywhere_subscription(id=st["s"])
    yield "RegisterCluster", lambda: eks.register_cluster(name=f"ext{n}", connectorConfig={"roleArn": ROLE, "provider": "OTHER"})
    yield "DeregisterCluster", lambda: eks.deregister_cluster(name=f"ext{n}")
    yield "DeleteAddon", lambda: eks.delete_addon(clusterName=c, addonName="vpc-cni")
    yield "DeleteNodegroup", lambda: eks.delete_nodegroup(clusterName=c, nodegroupName="ng")
    yield "DeleteCluster", lambda: eks.delete_cluster(name=c)


def run_all(eks, n):
    results = {}
    for op, thunk in all_ops(eks, n):
        try:
            thunk()
            results[op] = "ok"
        except botocore.exceptions.ClientError as e:
            results[op] = code(e)
        except (KeyError, IndexError, TypeError) as e:
            # A step whose input came from a failed earlier step.
            results[op] = f"skipped ({type(e).__name__})"
    return results


def main():
    mode = sys.argv[1]
    if mode == "flow":
        flow()
    elif mode == "terraform":
        terraform()
    elif mode == "all-ops":
        eks = client()
        results = run_all(eks, 0)
        model = set(eks.meta.service_model.operation_names)
        assert set(results) == model, sorted(model ^ set(results))
        print(json.dumps(results, indent=1, sort_keys=True))
    elif mode == "bench":
        eks = client()
        rounds = int(sys.argv[2])
        covered, requests = None, 0
        start = time.perf_counter()
        for n in range(rounds):
            results = run_all(eks, n)
            requests += len(results)
            ok = {op for op, r in results.items() if r == "ok"}
            covered = ok if covered is None else covered & ok
        seconds = time.perf_counter() - start
        print(json.dumps({"ops": len(covered or ()), "total": len(results), "requests": requests, "seconds": seconds}))
    else:
        sys.exit(f"unknown mode {mode}")


if __name__ == "__main__":
    main()

"""Drives kemu's web dashboard in headless Chromium with Playwright, as a user
would: a cluster created with the aws CLI appears, its kubeconfig downloads
from the button and works with kubectl, a Deployment's rollout and Pods show,
Pods sit on their Nodes, and a failed request shows in the log view.

Usage: dashboard.py ADMIN_URL SCREENSHOT_DIR (the aws CLI's environment
points at kemu's EKS facade). Prints one JSON object of what it saw.
"""

import json
import os
import subprocess
import sys

from playwright.sync_api import expect, sync_playwright

ADMIN, SHOTS = sys.argv[1], sys.argv[2]
CLUSTER = "dash"
TIMEOUT = 30_000


def run(*args):
    out = subprocess.run(args, capture_output=True, text=True, timeout=120)
    if out.returncode != 0:
        raise SystemExit(f"{args}: {out.returncode}\n{out.stdout}\n{out.stderr}")
    return out.stdout


def shot(page, name):
    page.screenshot(path=os.path.join(SHOTS, f"{name}.png"), full_page=True)


seen = {}
with sync_playwright() as p:
    browser = p.chromium.launch(
        executable_path=os.environ.get("CHROMIUM", "/usr/bin/chromium"),
        args=["--no-sandbox"],
    )
    page = browser.new_page(viewport={"width": 1400, "height": 900}, accept_downloads=True)
    page.set_default_timeout(TIMEOUT)
    page.goto(ADMIN + "/")
    expect(page.get_by_text("No clusters yet")).to_be_visible()

    # A cluster made through the cloud's CLI appears without a reload.
    run("aws", "eks", "create-cluster", "--name", CLUSTER,
        "--role-arn", "arn:aws:iam::000000000000:role/eks",
        "--resources-vpc-config", "subnetIds=subnet-1,subnet-2")
    run("aws", "eks", "create-nodegroup", "--cluster-name", CLUSTER,
        "--nodegroup-name", "workers", "--node-role", "arn:aws:iam::000000000000:role/node",
        "--subnets", "subnet-1", "--scaling-config", "minSize=2,maxSize=2,desiredSize=2",
        "--instance-types", "m5.large")
    row = page.locator(f'tr[data-cluster="{CLUSTER}"]')
    expect(row).to_contain_text("RUNNING")
    expect(row).to_contain_text("workers × 2")
    seen["cluster_row"] = row.inner_text()
    shot(page, "clusters")

    # The kubeconfig button hands over a working kubeconfig.
    with page.expect_download() as d:
        row.get_by_text("Kubeconfig").click()
    kubeconfig = os.path.join(SHOTS, "dash.kubeconfig")
    d.value.save_as(kubeconfig)
    seen["download_name"] = d.value.suggested_filename
    kubectl = ["kubectl", "--kubeconfig", kubeconfig, "--request-timeout=20s"]
    run(*kubectl, "create", "deployment", "web", "--image=nginx", "--replicas=3")
    # A request kemu refuses, for the log view.
    subprocess.run([*kubectl, "get", "configmap", "nope"], capture_output=True, timeout=60)

    # The cluster: its Deployment rolls out, and its Pods show.
    row.get_by_role("link", name=CLUSTER).click()
    expect(page.locator('[data-watch="live"]')).to_be_visible()
    workload = page.locator('tr[data-workload="Deployment/web"]')
    expect(workload).to_contain_text("ready")
    expect(workload).to_contain_text("3/3 ready")
    shot(page, "workloads")
    workload.get_by_role("link", name="web").click()
    detail = page.locator('[data-deployment="web"]')
    expect(detail.locator("tr[data-pod]")).to_have_count(3)
    expect(detail.locator("tr[data-pod]").first).to_contain_text("Running")
    seen["deployment_pods"] = detail.locator("tr[data-pod]").count()
    shot(page, "deployment")

    # Pods by Node: three Pods over the two Nodes of the pool.
    page.get_by_role("link", name="Pods by Node").click()
    nodes = page.locator(".node[data-node]")
    expect(nodes).to_have_count(2)
    expect(page.locator(".node[data-node] .chip", has_text="web-")).to_have_count(3)
    seen["nodes"] = nodes.count()
    shot(page, "pods-by-node")

    # A live change: scaling shows without a reload.
    run(*kubectl, "scale", "deployment", "web", "--replicas=1")
    expect(page.locator(".node[data-node] .chip", has_text="web-")).to_have_count(1)

    # The request log: the 404 is there, and the error filter keeps it.
    page.get_by_role("link", name="Requests").first.click()
    page.get_by_label("Status").select_option("errors")
    failed = page.locator('tr[data-status="404"]', has_text="configmaps")
    expect(failed.first).to_be_visible()
    expect(failed.first).to_contain_text(CLUSTER)
    expect(page.locator('tr[data-status="200"]')).to_have_count(0)
    seen["failed_request"] = failed.first.inner_text()
    page.get_by_label("Search requests").fill("nope")
    expect(failed.first).to_be_visible()
    shot(page, "requests")
    browser.close()

print(json.dumps(seen))

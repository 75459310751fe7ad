"""A Ray cluster on this machine (``ray.cluster_utils.Cluster``: a head and worker nodes of one
CPU each, on loopback), run in a child process of its own so that Ray's native client state
never lives in the test process: a process that forks case workers after Ray's client threads
ran in it can see its children crash in the fork.

Run as ``python -m tests.ray_nodes WORKERS``: prints one JSON line (``address``, and the
``raylets``' process ids of the worker nodes), then reads commands from stdin, one per line:
``remove I`` kills worker node I at once (answered ``removed``); end of input shuts the
cluster down.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass


@dataclass
class Nodes:
    """The child process that holds the cluster, and what it said about it."""

    process: subprocess.Popen
    address: str
    raylets: list[int]

    @classmethod
    def start(cls, workers: int) -> Nodes:
        """Start a head and ``workers`` worker nodes; returns once every node is up.

        Raises:
            RuntimeError: the cluster did not start (its stderr is in the message).
        """
        process = subprocess.Popen([sys.executable, "-m", "tests.ray_nodes", str(workers)],
                                   stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True)
        line = process.stdout.readline()
        if not line:
            raise RuntimeError(f"the Ray cluster did not start: {process.stderr.read()[-2000:]}")
        info = json.loads(line)
        return cls(process, info["address"], info["raylets"])

    def remove(self, index: int) -> None:
        """Kill worker node ``index`` without a graceful shutdown; returns once it is gone."""
        self.process.stdin.write(f"remove {index}\n")
        self.process.stdin.flush()
        assert self.process.stdout.readline().strip() == "removed"

    def shutdown(self, timeout: float = 120.0) -> None:
        """Shut the cluster down and wait for its process (``timeout`` in seconds, then
        killed)."""
        self.process.stdin.close()
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def main(workers: int) -> None:
    """Hold a cluster of a head and ``workers`` worker nodes until stdin ends."""
    from ray import cluster_utils

    nodes = cluster_utils.Cluster(initialize_head=True,
                                  head_node_args={"num_cpus": 1, "include_dashboard": False})
    added = [nodes.add_node(num_cpus=1) for _ in range(workers)]
    nodes.wait_for_nodes()
    raylets = [node.all_processes["raylet"][0].process.pid for node in added]
    print(json.dumps({"address": nodes.address, "raylets": raylets}), flush=True)
    for line in sys.stdin:
        command, _, index = line.partition(" ")
        if command == "remove":
            nodes.remove_node(added[int(index)], allow_graceful=False)
            print("removed", flush=True)
    nodes.shutdown()


if __name__ == "__main__":
    main(int(sys.argv[1]))

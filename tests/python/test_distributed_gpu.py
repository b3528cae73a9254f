"""The sparse layers under data parallelism on two GPUs (issue 45): the same
small model trained by one rank on the whole batch, by two ranks under DDP,
and by two ranks under FSDP2 (fully_shard) reaches the same losses, the
same 2:4 mask and the same flip rates. Each run is a torchrun job of
distributed_worker.py. Skips without torch, two CUDA GPUs or NCCL."""

import json
import os
import subprocess
import sys
import tempfile
import unittest

from _gpu import HAVE_GPU, WHY_NOT, torch

HERE = os.path.dirname(os.path.abspath(__file__))


def _why_not():
    if not HAVE_GPU:
        return WHY_NOT
    if torch.cuda.device_count() < 2:
        return "needs two CUDA GPUs, found %d" % torch.cuda.device_count()
    import torch.distributed as dist
    if not dist.is_available() or not dist.is_nccl_available():
        return "torch.distributed with NCCL is not available"
    return ""


WHY = _why_not()


@unittest.skipIf(WHY, WHY)
class DataParallel(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.results = {}
        with tempfile.TemporaryDirectory() as tmp:
            for mode, ranks in (("single", 1), ("ddp", 2), ("fsdp2", 2)):
                out = os.path.join(tmp, mode + ".json")
                cmd = [sys.executable, "-m", "torch.distributed.run",
                       "--standalone", "--nproc_per_node=%d" % ranks,
                       os.path.join(HERE, "distributed_worker.py"), mode, out]
                run = subprocess.run(cmd, capture_output=True, text=True,
                                     timeout=300)
                if run.returncode:
                    raise AssertionError(
                        "%s run failed (%d):\n%s\n%s" % (
                            mode, run.returncode, run.stdout[-4000:],
                            run.stderr[-8000:]))
                with open(out) as f:
                    cls.results[mode] = json.load(f)
                cls.results[mode]["mask"] = torch.load(out + ".mask.pt")

    def _compare(self, mode):
        ref, got = self.results["single"], self.results[mode]
        self.assertEqual(got["world"], 2)
        # The first step's forward is the same computation split by rows:
        # SparseDrop's shards drop exactly the blocks the one-rank run
        # drops (a rank drawing the wrong rows of the mask changes it).
        self.assertAlmostEqual(got["losses"][0], ref["losses"][0],
                               delta=1e-3 * abs(ref["losses"][0]))
        # Later steps differ by the rounding of gradients summed in another
        # order (bf16 GEMM outputs, then an fp32 all-reduce).
        for step, (a, b) in enumerate(zip(got["losses"], ref["losses"])):
            self.assertLess(abs(a - b), 1e-2 * abs(b),
                            "step %d: %s %g against one GPU %g" % (
                                step, mode, a, b))
        # Training happened, and the mask was refreshed from the same W
        # (masked decay on each rank's rows under FSDP2, W gathered for the
        # refresh).
        self.assertLess(ref["losses"][-1], ref["losses"][0])
        self.assertEqual(got["proj_steps"], ref["proj_steps"])
        # The same blocks keep the same weights, but for near ties that
        # the rounding of W can tip (at most 1 entry in 1000).
        same = float((got["mask"] == ref["mask"]).double().mean())
        self.assertGreater(same, 0.999)
        self.assertEqual(int(got["mask"].sum()), got["mask"].numel() // 2)
        self.assertGreater(max(ref["flip_rates"]), 0.0)
        for a, b in zip(got["flip_rates"], ref["flip_rates"]):
            self.assertAlmostEqual(a, b, delta=2e-3)

    def test_ddp_matches_one_gpu(self):
        self._compare("ddp")

    def test_fsdp2_matches_one_gpu(self):
        self._compare("fsdp2")


if __name__ == "__main__":
    unittest.main()

"""torchvision's AugMix with given draws, for the tests that replay tsrun's
augmix (torch-augmix.py, from augmix-tool's draws; torch-trace-ops.py, from
`tsrun bench --trace`): one copy of the replay, so that both compare with
the same torchvision forward."""
import torch
import torchvision.transforms as T


class Replay(T.AugMix):
    """AugMix whose draws are given: the Beta and Dirichlet weights m and w
    through _sample_dirichlet (torchvision's own hook), each chain's depth
    (when chain_depth <= 0), op indices, bins and signs through
    torch.randint (patched around forward). draw = (m, w, chains), a chain
    a list of (index, bin, sign), bin or sign -1 where the op draws none."""

    def __init__(self, draw, **kw):
        super().__init__(**kw)
        m, w, chains = draw
        self.dirichlet = [torch.tensor([m], dtype=torch.float32),
                          torch.tensor([w], dtype=torch.float32)]
        self.ints = []
        for chain in chains:
            if self.chain_depth <= 0:
                self.ints.append(len(chain))
            for index, b, sign in chain:
                self.ints.append(index)
                if b >= 0:
                    self.ints.append(b)
                if sign >= 0:
                    self.ints.append(sign)

    def _sample_dirichlet(self, params):
        want = self.dirichlet.pop(0)
        assert want.shape == params.shape, (want.shape, params.shape)
        return want

    def __call__(self, img):
        real = torch.randint

        def fake(*args, **kw):
            return torch.tensor([self.ints.pop(0)], dtype=torch.long)
        torch.randint = fake
        try:
            out = super().__call__(img)
        finally:
            torch.randint = real
        assert not self.ints and not self.dirichlet, "draws left over"
        return out

"""Issue 13's layer families in small validation networks: padding, resampling, shuffles and
activations, the recurrent layers, a sparse embedding and an LSTM language model (networks.py's NETWORKS)."""

import torch.nn as nn

from networks_efficientnet import StochasticDepth


# --------------------------------------------------------------------------
# Issue 13's layers: padding, resampling, shuffles and activations (each also in 1.13)
# --------------------------------------------------------------------------

class ZooNet(nn.Module):
    """pad conv1 prelu pad2 conv2 hardtanh unshuffle selu conv3 celu(inplace) drop (AlphaDropout)
    up (bilinear) zpad conv4 unfold fold shuffle threshold logsig conv5 glu softsign tanhshrink down (nearest,
    to a size) sd (StochasticDepth, row) softmin head; loss bce_with_logits on [N, 2, 16, 16]."""

    def __init__(self):
        super().__init__()
        self.pad = nn.ReflectionPad2d(1)
        self.conv1 = nn.Conv2d(3, 8, 3)
        self.prelu = nn.PReLU(8)
        self.pad2 = nn.ReplicationPad2d((1, 0, 1, 0))
        self.conv2 = nn.Conv2d(8, 16, 2)
        self.hardtanh = nn.Hardtanh(-2.0, 2.0)
        self.unshuffle = nn.PixelUnshuffle(2)
        self.selu = nn.SELU()
        self.conv3 = nn.Conv2d(64, 32, 1)
        self.celu = nn.CELU(0.5, inplace=True)
        self.drop = nn.AlphaDropout(0.1)
        self.up = nn.Upsample(scale_factor=2, mode="bilinear")
        self.zpad = nn.ZeroPad2d(1)
        self.conv4 = nn.Conv2d(32, 16, 3)
        self.unfold = nn.Unfold(2, stride=2)
        self.fold = nn.Fold(16, 2, stride=2)
        self.shuffle = nn.PixelShuffle(2)
        self.threshold = nn.Threshold(0.1, 0.0)
        self.logsig = nn.LogSigmoid()
        self.conv5 = nn.Conv2d(4, 8, 3, padding=1)
        self.glu = nn.GLU(dim=1)
        self.softsign = nn.Softsign()
        self.tanhshrink = nn.Tanhshrink()
        self.down = nn.Upsample(size=(16, 16))
        self.sd = StochasticDepth(0.5, "row")
        self.softmin = nn.Softmin(dim=1)
        self.head = nn.Conv2d(4, 2, 1)

    NAMES = ("pad conv1 prelu pad2 conv2 hardtanh unshuffle selu conv3 celu drop up zpad conv4 unfold fold "
             "shuffle threshold logsig conv5 glu softsign tanhshrink down sd softmin head").split()

    def forward(self, x):
        # one statement per layer: `x` is rebound as each layer returns, so no Python variable
        # holds a tensor longer than nn.Sequential would (the inference peak stays comparable)
        for name in self.NAMES:
            x = getattr(self, name)(x)
        return x


class ZooSeq(nn.Module):
    """1-D: pad (ReflectionPad1d) conv1 act (Hardtanh, inplace) cpad (ConstantPad1d) up (linear,
    align_corners) conv2 prelu (one weight) rpad (ReplicationPad1d) pool flatten fc; loss l1 on [N, 8]."""

    def __init__(self):
        super().__init__()
        self.pad = nn.ReflectionPad1d(2)
        self.conv1 = nn.Conv1d(4, 8, 5)
        self.act = nn.Hardtanh(inplace=True)
        self.cpad = nn.ConstantPad1d((1, 2), 0.5)
        self.up = nn.Upsample(scale_factor=1.5, mode="linear", align_corners=True)
        self.conv2 = nn.Conv1d(8, 8, 3)
        self.prelu = nn.PReLU()
        self.rpad = nn.ReplicationPad1d(1)
        self.pool = nn.AdaptiveAvgPool1d(4)
        self.flatten = nn.Flatten()
        self.fc = nn.Linear(32, 8)

    def forward(self, x):
        for name in ("pad", "conv1", "act", "cpad", "up", "conv2", "prelu", "rpad", "pool", "flatten", "fc"):
            x = getattr(self, name)(x)
        return x


class ZooMlp(nn.Module):
    """fc1 glu fc2 threshold(inplace) fc3 selu(inplace) fc4 out (LogSoftmax); loss nll."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(64, 128)
        self.glu = nn.GLU()
        self.fc2 = nn.Linear(64, 64)
        self.threshold = nn.Threshold(-0.5, -0.5, inplace=True)
        self.fc3 = nn.Linear(64, 64)
        self.selu = nn.SELU(inplace=True)
        self.fc4 = nn.Linear(64, 10)
        self.out = nn.LogSoftmax(dim=1)

    def forward(self, x):
        for name in ("fc1", "glu", "fc2", "threshold", "fc3", "selu", "fc4", "out"):
            x = getattr(self, name)(x)
        return x


class ZooTorch2(nn.Module):
    """Layers torch 1.13 lacks or cannot train: pad (CircularPad2d) conv1 shuffle (ChannelShuffle)
    prelu zpad3 (ZeroPad3d, on channels too) conv2 flatten (start_dim 2) cpad (CircularPad1d)
    crop (ZeroPad1d, negative) conv3 glu head.{0 flatten, 1 linear}; loss huber."""

    NAMES = "pad conv1 shuffle prelu zpad3 conv2 flatten cpad crop conv3 glu head".split()

    def __init__(self):
        super().__init__()
        self.pad = nn.CircularPad2d(1)
        self.conv1 = nn.Conv2d(4, 8, 3)
        self.shuffle = nn.ChannelShuffle(2)
        self.prelu = nn.PReLU(8)
        self.zpad3 = nn.ZeroPad3d(1)
        self.conv2 = nn.Conv2d(10, 8, 3)
        self.flatten = nn.Flatten(2)
        self.cpad = nn.CircularPad1d(2)
        self.crop = nn.ZeroPad1d((0, -4))
        self.conv3 = nn.Conv1d(8, 4, 3, padding=1)
        self.glu = nn.GLU(dim=1)
        self.head = nn.Sequential(nn.Flatten(), nn.Linear(128, 10))

    def forward(self, x):
        for name in self.NAMES:
            x = getattr(self, name)(x)
        return x


class GruTagger(nn.Module):
    """gru (GRU 16 -> 32, 2 layers, bidirectional, batch_first, dropout 0.25) fc (Linear 64 -> 8)
    on every step; loss mse on [N, 12, 8]. The GRU's h_n is dropped at once (`[0]`)."""

    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(16, 32, num_layers=2, bidirectional=True, batch_first=True, dropout=0.25)
        self.fc = nn.Linear(64, 8)

    def forward(self, x):
        return self.fc(self.gru(x)[0])


class LstmSeq(nn.Module):
    """lstm (LSTM 16 -> 32, 2 layers, batch_first) fc (Linear 32 -> 10) on every step; loss mse.
    torch 2.x runs oneDNN's LSTM here, 1.13 the generic path."""

    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(16, 32, num_layers=2, batch_first=True)
        self.fc = nn.Linear(32, 10)

    def forward(self, x):
        return self.fc(self.lstm(x)[0])


class RnnCells(nn.Module):
    """cell0 (LSTMCell 16 -> 32 on x) cell1 (LSTMCell on x and cell0's (h, c)) gru (GRUCell on x and
    cell1's h) fc (Linear 32 -> 10); loss cross_entropy."""

    def __init__(self):
        super().__init__()
        self.cell0 = nn.LSTMCell(16, 32)
        self.cell1 = nn.LSTMCell(16, 32)
        self.gru = nn.GRUCell(16, 32)
        self.fc = nn.Linear(32, 10)

    def forward(self, x):  # one expression: each state is freed once read, as the spec's graph frees it
        return self.fc(self.gru(x, self.cell1(x, self.cell0(x))[0]))


LM_VOCAB = 200


class BowSparse(nn.Module):
    """examples/bow_sparse.yaml: embed (Embedding 500 -> 32, sparse=True: a sparse gradient) bag
    (the mean over the sequence) fc1 (Linear 32 -> 64) relu fc2 (Linear 64 -> 4)."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(500, 32, sparse=True)
        self.fc1 = nn.Linear(32, 64)
        self.relu = nn.ReLU()
        self.fc2 = nn.Linear(64, 4)

    def forward(self, ids):
        return self.fc2(self.relu(self.fc1(self.embed(ids).mean(1))))


class LstmLM(nn.Module):
    """examples/lstm_lm.yaml: embed (Embedding 200 -> 32) lstm (LSTM 32 -> 32, 2 layers, batch_first)
    decoder (Linear 32 -> 200, its weight the embedding's: tied) on every step; the logits viewed as
    [N·T, 200]; loss cross_entropy against the next ids [N·T]."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(LM_VOCAB, 32)
        self.lstm = nn.LSTM(32, 32, num_layers=2, batch_first=True)
        self.decoder = nn.Linear(32, LM_VOCAB)
        self.decoder.weight = self.embed.weight

    def forward(self, ids):
        return self.decoder(self.lstm(self.embed(ids))[0]).view(-1, LM_VOCAB)

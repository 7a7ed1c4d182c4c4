"""Node-input embeddings of the numbers and types in the graph (``docs/numbers_types.md``).

:class:`NumberTypeEmbedding` reads ``x_num`` (N, 10) and ``x_type`` (N, 6) of :func:`programl.io.pyg.to_pyg`
(the ``number_digits`` / ``type_shape`` node features, :mod:`programl.graph_builder.numbers_types`) and returns an
(N, D) vector that the graph models add to the node-text embedding: every bounded component is a word with an
embedding of its own, and a node's vector is their sum (zero for a node without a number or a shape).

* number ``[kind, sign, exponent, d1..d7]``: kind (3), sign (2), exponent (-64..64: 129) and one table per digit
  position (7 x 10), as PERFOGRAPH embeds digits by their place;
* type shape ``[kind, elements, scalars, bits, element_bits, element_is_float]``: kind (3), the four counts as
  ``floor(log2(1 + v))`` buckets (0..31, one table each), and whether the elements are floating point.

:class:`StringBytesEmbedding` reads ``x_str`` (N, 17), the ``string_bytes`` node feature
(:mod:`programl.graph_builder.string_bytes`): the length as a ``floor(log2(1 + v))`` bucket and one table per byte
place (16 x 257: a byte's value plus one, 0 past the end), summed; zero for a node without a string.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

__all__ = ["NumberTypeEmbedding", "StringBytesEmbedding"]

_DIGITS = 7
_EXPONENT = 64
_BUCKETS = 32


def _log2_bucket(values: Tensor) -> Tensor:
    return torch.floor(torch.log2(values.clamp(min=0).double() + 1)).long().clamp(max=_BUCKETS - 1)


class NumberTypeEmbedding(nn.Module):
    """Sum of the embeddings of a node's number and type-shape components (module docstring).

    Args:
        channels: D, the node-state size.
    """

    def __init__(self, channels: int) -> None:
        super().__init__()
        self.number_kind = nn.Embedding(4, channels)
        self.sign = nn.Embedding(2, channels)
        self.exponent = nn.Embedding(2 * _EXPONENT + 1, channels)
        self.digits = nn.Embedding(_DIGITS * 10, channels)
        self.type_kind = nn.Embedding(4, channels)
        self.counts = nn.Embedding(4 * _BUCKETS, channels)
        self.is_float = nn.Embedding(2, channels)
        # a sum of ~10 unit-variance words would drown the node text's embedding: start them small
        for table in (self.number_kind, self.sign, self.exponent, self.digits):
            nn.init.normal_(table.weight, std=10**-0.5)
        for table in (self.type_kind, self.counts, self.is_float):
            nn.init.normal_(table.weight, std=6**-0.5)

    def forward(self, x_num: Tensor, x_type: Tensor) -> Tensor:
        """(N, D) from ``x_num`` (N, 10) and ``x_type`` (N, 6) long."""
        kind = x_num[:, 0].clamp(0, 3)
        digits = x_num[:, 3 : 3 + _DIGITS].clamp(0, 9) + 10 * torch.arange(_DIGITS, device=x_num.device)
        number = (
            self.number_kind(kind)
            + self.sign(x_num[:, 1].clamp(0, 1))
            + self.exponent(x_num[:, 2].clamp(-_EXPONENT, _EXPONENT) + _EXPONENT)
            + self.digits(digits).sum(dim=1)
        )
        shape_kind = x_type[:, 0].clamp(0, 3)
        buckets = _log2_bucket(x_type[:, 1:5]) + _BUCKETS * torch.arange(4, device=x_type.device)
        shape = self.type_kind(shape_kind) + self.counts(buckets).sum(dim=1) + self.is_float(x_type[:, 5].clamp(0, 1))
        return number * (kind > 0).unsqueeze(1).to(number.dtype) + shape * (shape_kind > 0).unsqueeze(1).to(shape.dtype)


_PLACES = 16
_BYTE_IDS = 257


class StringBytesEmbedding(nn.Module):
    """Sum of the embeddings of a string constant's length and first bytes, each by its place (module docstring).

    Args:
        channels: D, the node-state size.
    """

    def __init__(self, channels: int) -> None:
        super().__init__()
        self.length = nn.Embedding(_BUCKETS, channels)
        self.bytes = nn.Embedding(_PLACES * _BYTE_IDS, channels)
        for table in (self.length, self.bytes):  # 17 words summed: start them small (as NumberTypeEmbedding)
            nn.init.normal_(table.weight, std=(1 + _PLACES) ** -0.5)

    def forward(self, x_str: Tensor) -> Tensor:
        """(N, D) from ``x_str`` (N, 17) long."""
        length = x_str[:, 0]
        places = x_str[:, 1 : 1 + _PLACES].clamp(0, _BYTE_IDS - 1) + _BYTE_IDS * torch.arange(
            _PLACES, device=x_str.device
        )
        out = self.length(_log2_bucket(length)) + self.bytes(places).sum(dim=1)
        return out * (length > 0).unsqueeze(1).to(out.dtype)

"""What a stream's vectors mean: feature names and kinds, the label's name, the class labels."""

from __future__ import annotations

from dataclasses import dataclass

KINDS = ("numeric", "nominal")


@dataclass(frozen=True)
class Feature:
    """One feature of a stream.

    Attributes:
        name: the column / attribute name.
        kind: ``"numeric"`` (a float) or ``"nominal"`` (a category).
        categories: for a nominal feature, its values in declaration order; the feature's value
            in ``x`` is the float index into this tuple (0.0, 1.0, ...), NaN when missing.
            Empty for a numeric feature.
    """

    name: str
    kind: str = "numeric"
    categories: tuple[str, ...] = ()

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"feature {self.name!r}: kind must be one of {KINDS}, got {self.kind!r}")


@dataclass(frozen=True)
class Schema:
    """The layout of a stream's samples ``(x, y)``.

    Attributes:
        features: one `Feature` per entry of ``x``, in ``x``'s order.
        target: the label's name (a column name for files, ``"class"`` for generators).
        classes: the possible labels when known in advance (ARFF nominal class, generators),
            else None (CSV: labels are whatever text the file holds).
    """

    features: tuple[Feature, ...]
    target: str = "class"
    classes: tuple | None = None

    @property
    def feature_names(self) -> list[str]:
        return [f.name for f in self.features]

    @property
    def n_features(self) -> int:
        return len(self.features)

    @property
    def nominal(self) -> list[int]:
        """Indices in ``x`` of the nominal features."""
        return [i for i, f in enumerate(self.features) if f.kind == "nominal"]

    @classmethod
    def numeric(cls, names, target: str = "class", classes=None) -> Schema:
        """A schema of numeric features named ``names``."""
        return cls(tuple(Feature(n) for n in names), target, None if classes is None else tuple(classes))

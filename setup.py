"""The package's C extensions; everything else is declared in pyproject.toml.

``marketsim.policies._native.tree_builder`` grows the random-forest policy's trees
(scikit-learn's entropy trees, node for node; its forests fit about 2.5 times faster). It is
optional: where it cannot be built (no C compiler) the install goes on and the policy grows
the same trees through scikit-learn.
``marketsim.market._native.hand_out`` is the block engine's hand-out loop (``[scenario] engine =
"blocks"``), also optional: without it the same loop runs in Python, slower.
``marketsim.aggregation._native.ones_products`` multiplies a label incidence matrix's 0/1
pattern by dense vectors without its values array (8 bytes a label a big market does not hold),
adding in scipy's order; without it the label log keeps the values and scipy's kernels run.
``-ffp-contract=off``: no fused multiply-adds, every operation rounded as scikit-learn's are.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "marketsim.policies._native.tree_builder",
            ["marketsim/policies/_native/tree_builder.c"],
            extra_compile_args=["-ffp-contract=off"],
            optional=True,
        ),
        Extension(
            "marketsim.market._native.hand_out",
            ["marketsim/market/_native/hand_out.c"],
            optional=True,
        ),
        Extension(
            "marketsim.aggregation._native.ones_products",
            ["marketsim/aggregation/_native/ones_products.c"],
            extra_compile_args=["-ffp-contract=off"],
            optional=True,
        ),
    ]
)

"""Integrated gradients and the gradient family: the first-party ``ig`` explainer plugin."""

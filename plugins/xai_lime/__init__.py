"""LIME attributions through the lime library: the first-party ``lime`` explainer plugin."""

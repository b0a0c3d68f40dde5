"""SHAP attributions through the shap library: the first-party ``shap`` explainer plugin."""

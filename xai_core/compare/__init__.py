"""Does the explanation survive the hardware: row-wise agreement metrics, ``compare_backends``,
``compare_methods``, ``faithfulness``, and their report sections."""

"""What a model that generates is: its generation spec, its checks, the loop of generation and its ports."""

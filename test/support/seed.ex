defmodule McpFramer.Seed do
  @moduledoc false
  # Randomised tests draw case n of run r from the seed {seed, n, r}, where
  # seed comes from the environment variable the test names, so that a
  # failure can say how to reproduce itself.

  # The seed in `variable`, or a new one.
  @spec seed(String.t()) :: pos_integer()
  def seed(variable) do
    case System.get_env(variable) do
      nil -> :rand.uniform(1_000_000_000)
      seed -> String.to_integer(seed)
    end
  end

  # Seeds this process for case `n` of `run`, and says how to get it again.
  @spec case!(String.t(), pos_integer(), pos_integer(), pos_integer()) :: String.t()
  def case!(variable, seed, n, run) do
    :rand.seed(:exsss, {seed, n, run})
    "#{variable}=#{seed} (case #{n} of run #{run})"
  end
end

# Completion of `storypost` for fish. Install: storypost completion fish --install
# The candidates come from `storypost __complete`.
function __storypost_complete
    set -l words (commandline -opc)[2..-1] (commandline -ct)
    set -l found (storypost __complete $words 2>/dev/null)
    if test "$found[1]" = __files__
        __fish_complete_path (commandline -ct)
    else
        printf '%s\n' $found
    end
end
complete -c storypost -f -a '(__storypost_complete)'

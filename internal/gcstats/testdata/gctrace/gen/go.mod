module example.com/gctracegen

go 1.19
